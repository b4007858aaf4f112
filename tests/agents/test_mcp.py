"""MCP toolsets against a real MCP server process (tests/mcp_server.py), over stdio and
Streamable HTTP: calls in the turn and as their own activities, server errors,
a server that dies mid-call, tool lists that change, approvals by tool name."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType

from ratchet.agents import ScriptedModel, ToolCallingAgent, tool
from ratchet.agents.mcp_tools import MCPToolset
from ratchet.client import AgentClient
from ratchet.devserver import free_port
from ratchet.errors import ConfigurationError, RunFailedError
from ratchet.wire import RunOptions
from ratchet.worker import build_worker

from ..history import events, of_type, until

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def calls(tmp_path: Path) -> Path:
    return tmp_path / "mcp-calls.jsonl"


def recorded(calls: Path) -> list[dict]:
    if not calls.exists():
        return []
    return [json.loads(line) for line in calls.read_text().splitlines()]


def notes_server(calls: Path, **options) -> MCPToolset:
    """tests/mcp_server.py over stdio, recording its calls in ``calls``."""
    env = {"MCP_CALLS": str(calls), "MCP_CRASHED": f"{calls}.crashed", "PATH": "/usr/bin:/bin"}
    return MCPToolset.stdio(
        sys.executable, "-m", "tests.mcp_server", name="notes", cwd=str(ROOT), env=env, **options
    )


@pytest.fixture
async def notes(calls: Path) -> AsyncIterator[MCPToolset]:
    toolset = notes_server(calls)
    yield toolset
    await toolset.aclose()


@pytest.fixture
def http_server(calls: Path) -> Iterator[str]:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.mcp_server", "--http", str(port)],
        cwd=ROOT,
        env={"MCP_CALLS": str(calls), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:  # until it listens
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, "the MCP server exited"
                assert time.monotonic() < deadline, "the MCP server did not listen"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        server.wait(10)


class Seeing(ScriptedModel):
    """A scripted model that notes the tools each request offered."""

    def __init__(self, script) -> None:
        super().__init__(script)
        self.offered: list[list[str]] = []

    async def create(self, messages, tools, context):
        self.offered.append(sorted(t.name for t in tools))
        return await super().create(messages, tools, context)


def tool_results(thread) -> list[tuple[str, bool]]:
    return [(m.text, m.is_error) for m in thread.messages if m.role == "tool"]


async def test_mcp_tools_are_listed_for_the_model_and_called_in_the_turn(
    agent_client: AgentClient, notes: MCPToolset, calls: Path
):
    model = Seeing(
        [
            ScriptedModel.call("write_note", name="todo", text="buy milk"),
            ScriptedModel.call("read_note", name="todo"),
            "done",
        ]
    )
    agent = ToolCallingAgent(model, toolsets=[notes])
    async with build_worker(agent_client, {"notes": agent}):
        handle = await agent_client.start_run("notes", "note it")
        result = await handle.result()
        thread = (await handle.record()).session.thread
    assert result.output == "done"
    assert model.offered[0] == ["crash", "crash_once", "learn", "read_note", "write_note"]
    assert tool_results(thread) == [("saved todo", False), ("buy milk", False)]
    assert [c["tool"] for c in recorded(calls)] == ["write_note", "read_note"]
    assert len({c["pid"] for c in recorded(calls)}) == 1  # one server process per worker


async def test_a_server_error_is_a_tool_error_the_model_reads(
    agent_client: AgentClient, notes: MCPToolset
):
    model = ScriptedModel([ScriptedModel.call("read_note", name="nope"), "no such note"])
    async with build_worker(agent_client, {"notes": ToolCallingAgent(model, toolsets=[notes])}):
        handle = await agent_client.start_run("notes", "read nope")
        assert (await handle.result()).output == "no such note"
        ((text, is_error),) = tool_results((await handle.record()).session.thread)
    assert is_error and "read_note failed on MCP server 'notes'" in text
    assert "no note named 'nope'" in text or "Error executing tool read_note" in text


async def test_a_server_that_dies_mid_call_is_a_tool_error_and_is_started_again(
    agent_client: AgentClient, notes: MCPToolset, calls: Path
):
    model = ScriptedModel(
        [
            ScriptedModel.call("crash"),
            ScriptedModel.call("read_note", name="plan"),
            "the server came back",
        ]
    )
    async with build_worker(agent_client, {"notes": ToolCallingAgent(model, toolsets=[notes])}):
        handle = await agent_client.start_run("notes", "crash it")
        assert (await handle.result()).output == "the server came back"
        results = tool_results((await handle.record()).session.thread)
    assert results[0][1] and "went away during the call to crash" in results[0][0]
    assert results[1] == ("ship on friday", False)
    crashed, read = recorded(calls)
    assert crashed["tool"] == "crash" and read["tool"] == "read_note"
    assert crashed["pid"] != read["pid"]  # a new server process


@pytest.mark.slow  # a child process
async def test_a_server_killed_between_calls_is_noticed_at_once_and_started_again(
    notes: MCPToolset, calls: Path
):
    """A SIGKILL between two calls, the second well within IDLE_CHECK of the first:
    before, the connection looked alive and the call failed with "may or may not
    have taken effect" although nothing reached a server."""
    assert await notes.call("read_note", {"name": "plan"}) == "ship on friday"
    (first,) = recorded(calls)
    os.kill(first["pid"], signal.SIGKILL)
    await until(lambda: asyncio.sleep(0, notes.connected), lambda connected: not connected)
    assert await notes.call("read_note", {"name": "plan"}) == "ship on friday"
    second = recorded(calls)[-1]
    assert second["pid"] != first["pid"]  # a new server process


async def test_a_turn_on_a_server_that_cannot_start_fails_short_with_its_cause_first(
    agent_client: AgentClient,
):
    """Over 4 KB (its chained traceback) the Temporal UI showed "Failure exceeds size
    limit" instead of the failure."""
    broken = MCPToolset.stdio("/nonexistent/mcp-server", name="broken")
    agent = ToolCallingAgent(ScriptedModel(["unused"]), toolsets=[broken])
    async with build_worker(agent_client, {"broken": agent}):
        handle = await agent_client.start_run("broken", "hi", options=RunOptions(max_attempts=1))
        with pytest.raises(RunFailedError):
            await handle.result()
        history = await events(handle)
    (failed,) = of_type(history, EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED)
    failure = failed.activity_task_failed_event_attributes.failure
    assert failure.message.startswith("FileNotFoundError")
    assert "MCP server 'broken' could not be started" in failure.message
    assert failure.ByteSize() < 4096


async def test_a_changed_tool_list_is_read_again_on_the_next_turn(
    agent_client: AgentClient, notes: MCPToolset
):
    model = Seeing([ScriptedModel.call("learn"), ScriptedModel.call("recall"), "recalled"])
    async with build_worker(agent_client, {"notes": ToolCallingAgent(model, toolsets=[notes])}):
        handle = await agent_client.start_run("notes", "learn and recall")
        assert (await handle.result()).output == "recalled"
        results = tool_results((await handle.record()).session.thread)
    assert "recall" not in model.offered[0]
    assert "recall" in model.offered[1]  # cached for 5 minutes, yet read again after the change
    assert results == [("learned recall", False), ("plan", False)]


async def test_streamable_http_server_in_a_session(
    agent_client: AgentClient, http_server: str, calls: Path
):
    toolset = MCPToolset.http(http_server, name="notes", headers={"Authorization": "Bearer t"})
    model = ScriptedModel(
        [
            ScriptedModel.call("write_note", name="a", text="one"),
            "saved",
            ScriptedModel.call("read_note", name="a"),
            "read",
        ]
    )
    try:
        agent = ToolCallingAgent(model, toolsets=[toolset])
        async with build_worker(agent_client, {"notes": agent}):
            session = await agent_client.start_session("notes")
            assert (await session.send("write a")).output == "saved"
            assert (await session.send("read a")).output == "read"
            thread = (await session.record()).session.thread
            await session.close()
    finally:
        await toolset.aclose()
    assert ("one", False) in tool_results(thread)
    assert [c["tool"] for c in recorded(calls)] == ["write_note", "read_note"]


async def test_a_durable_mcp_tool_waits_for_approval_by_name_then_runs_as_an_activity(
    agent_client: AgentClient, calls: Path
):
    notes = notes_server(calls, durable=True, prefix="notes")
    model = ScriptedModel([ScriptedModel.call("notes_write_note", name="x", text="y"), "ok"])
    agent = ToolCallingAgent(
        model,
        toolsets=[notes],
        approval_policy=lambda name, args: name == "notes_write_note",
    )
    try:
        async with build_worker(agent_client, {"notes": agent}):
            handle = await agent_client.start_run("notes", "write x")
            (pending,) = await handle.wait_for_pending()
            assert pending.action.kind == "approval"
            assert recorded(calls) == []  # nothing ran before the approval
            await handle.approve(pending.action.id, by="alice")
            assert (await handle.result()).output == "ok"
            results = tool_results((await handle.record()).session.thread)
    finally:
        await notes.aclose()
    assert results == [("saved x", False)]
    assert [c["tool"] for c in recorded(calls)] == ["write_note"]


@pytest.mark.slow  # a child process
async def test_a_toolset_tool_named_like_an_agent_tool_is_refused_saying_to_prefix(
    notes: MCPToolset,
):
    @tool
    def read_note(name: str) -> str:
        """A local tool with the server's tool's name."""
        return name

    agent = ToolCallingAgent(ScriptedModel(["unused"]), tools=[read_note], toolsets=[notes])
    with pytest.raises(ConfigurationError, match="prefix"):
        await agent.turn_tools()


async def test_an_mcp_server_that_cannot_start_says_so():
    broken = MCPToolset.stdio("/nonexistent/mcp-server", name="broken")
    with pytest.raises(Exception, match="MCP server 'broken' could not be started"):
        await broken.tools()


@pytest.mark.slow  # a child process
async def test_calls_at_once_on_a_cold_toolset_share_one_server_process(
    notes: MCPToolset, calls: Path
):
    answers = await asyncio.gather(*(notes.call("read_note", {"name": "plan"}) for _ in range(4)))
    assert answers == ["ship on friday"] * 4
    assert len({c["pid"] for c in recorded(calls)}) == 1


async def test_a_durable_call_whose_server_dies_is_retried_on_a_new_server(
    agent_client: AgentClient, calls: Path
):
    notes = notes_server(calls, durable=True)
    model = ScriptedModel([ScriptedModel.call("crash_once"), "done"])
    options = RunOptions(initial_retry_interval=timedelta(milliseconds=50))
    try:
        async with build_worker(agent_client, {"notes": ToolCallingAgent(model, toolsets=[notes])}):
            handle = await agent_client.start_run("notes", "crash once", options=options)
            assert (await handle.result()).output == "done"
            results = tool_results((await handle.record()).session.thread)
    finally:
        await notes.aclose()
    assert results == [("survived", False)]  # the model never saw the crash
    first, second = recorded(calls)
    assert first["tool"] == second["tool"] == "crash_once" and first["pid"] != second["pid"]
