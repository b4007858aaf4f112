"""``ratchet watch`` and the operator views of ``ratchet sessions``, run as a user runs them."""

from __future__ import annotations

import asyncio
import signal

from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.worker import build_worker
from tests.chaos import ended

from ..client.test_observability import listed, weather_agent
from .test_cli_sessions import ratchet, read_until, spawn


async def test_watch_follows_a_session_live_until_it_closes(
    temporal_server: DevServer, agent_client: AgentClient, task_queue: str
):
    async with build_worker(agent_client, {"weather": weather_agent(stream=True)}):
        session = await agent_client.start_session("weather", session_id=f"w-{task_queue}")
        watching = asyncio.ensure_future(ratchet(temporal_server, task_queue, "watch", session.id))
        result = await session.send("weather in Oslo?")
        await session.close()
        code, out, err = await watching
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"▶ run 1 of {session.id} · weather"
    assert "  → weather(city='Oslo')" in lines or any(
        line.startswith("  → weather(") for line in lines
    )
    assert "  ← sunny in Oslo" in lines
    assert f"  {result.output}" in lines  # the streamed text, on one line
    assert any(line.startswith("✓ turn 1 · ") and "weather(" in line for line in lines)
    assert any(line.startswith("✓ turn 2 · ") and "final answer" in line for line in lines)
    assert lines[-2:] == [f"■ run {session.id}-run-1 COMPLETED", result.output]
    assert "\033[" not in out  # not a terminal: no colours, no spinner


async def test_sessions_show_prints_the_runs_turns_as_a_table_and_list_filters_by_status(
    temporal_server: DevServer, agent_client: AgentClient, task_queue: str
):
    async with build_worker(agent_client, {"weather": weather_agent()}):
        session = await agent_client.start_session("weather", session_id=f"s-{task_queue}")
        await session.send("weather in Oslo?")
        code, out, err = await ratchet(temporal_server, task_queue, "sessions", "show", session.id)
        await listed(
            agent_client.temporal, f'WorkflowId = "{session.id}" AND AgentStatus = "PENDING"'
        )
        listing = await ratchet(
            temporal_server, task_queue, "sessions", "list", "--status", "pending"
        )
        await session.close()
    assert code == 0, err
    header = next(line for line in out.splitlines() if line.startswith("turn "))
    assert header.split() == ["turn", "scheduled", "took", "tokens", "cost", "did"]
    rows = out.split(header)[1].splitlines()[2:4]
    assert rows[0].split()[0] == "1" and "weather(" in rows[0]
    assert rows[1].split()[0] == "2" and rows[1].endswith("final answer")
    assert "$0.0" in rows[0]  # the agent's model has a price
    assert listing[0] == 0, listing[2]
    found = [line.split() for line in listing[1].splitlines()[2:]]
    assert [session.id, "session", "weather", "PENDING", "2"] in [row[:5] for row in found]


async def test_watch_says_when_no_worker_takes_the_task_and_that_the_run_goes_on_after_ctrl_c(
    temporal_server: DevServer, agent_client: AgentClient, task_queue: str
):
    handle = await agent_client.start_run("weather", "weather in Oslo?")  # no worker
    watch = await spawn(temporal_server, task_queue, "watch", handle.id)
    try:
        said = await read_until(watch.stdout, "\n")  # silent before
        watch.send_signal(signal.SIGINT)
        _, err = await ended(watch)
    finally:
        if watch.returncode is None:
            watch.kill()
        await handle.workflow.terminate("test over")
    assert said.startswith(f"note: no worker has taken {handle.id}'s task in 5 s"), said
    text = err.decode()
    assert watch.returncode == 130 and "Traceback" not in text, text
    assert f"interrupted: {handle.id} goes on without this command." in text
    assert f"watch it again: ratchet watch {handle.id}" in text
