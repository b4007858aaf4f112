"""Client tools: offered to the model with a send, run by the caller, whose result
the run waits for durably (``ratchet.agents._client_tools``)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from ratchet.client import AgentClient, AgentStatus
from ratchet.devserver import DevServer
from ratchet.errors import InvalidInputError, InvalidOptionsError
from ratchet.testing import WorkerProcess
from ratchet.types import ClientTool
from ratchet.wire import RunOptions, SessionOptions
from ratchet.worker import build_worker

from ..conftest import ROOT
from ..web_agents import AGENTS, CONFIRM


@pytest.mark.timeout(300)
async def test_a_client_tool_call_waits_across_a_worker_restart_for_its_result(
    agent_client: AgentClient, temporal_server: DevServer, task_queue: str
):
    env = {"PYTHONPATH": str(ROOT)}
    workers = [WorkerProcess(temporal_server, task_queue, "tests.web_agents:AGENTS", env=env)]
    try:
        workers[0].wait_ready()
        session = await agent_client.start_session("confirmer")
        request = await session.submit("v2", client_tools=[CONFIRM])
        (view,) = await session.wait_for_pending()
        assert view.action.kind == "client" and view.action.call is not None
        assert (view.action.call.name, view.action.call.arguments) == (
            "confirm",
            '{"action": "deploy v2"}',
        )
        assert view.deadline == view.waiting_since + timedelta(minutes=10)  # the default
        status = await session.status()
        assert status.run_status == AgentStatus.AWAITING_CLIENT
        assert status.waiting_for == ['client: confirm(action="deploy v2")']
        await session.submit("and then?")  # queues behind the run that waits
        assert (await session.status()).waiting == 1

        workers[0].kill()  # the wait is the workflow's: no worker holds it
        workers.append(
            WorkerProcess(temporal_server, task_queue, "tests.web_agents:AGENTS", env=env)
        )
        await asyncio.to_thread(workers[-1].wait_ready)
        decision = await session.provide_tool_result(view.action.id, "yes, go", by="alice")
        assert (decision.answer, decision.by) == ("yes, go", "alice")
        result = await session.send("v2", request_id=request)  # its answer, once it ends
        with pytest.raises(InvalidInputError):  # a call takes one result
            await session.provide_tool_result(view.action.id, "no")
        with pytest.raises(InvalidInputError, match="waits for no client tool call 'nobody'"):
            await session.provide_tool_result("nobody", "no")
        thread = await session.thread()
        await session.close()
    finally:
        for worker in workers:
            worker.stop()
    assert result.output == "Confirmed: yes, go"
    results = [m for m in thread.messages if m.role == "tool"]
    assert [(m.tool_call_id, m.content) for m in results][0] == (view.action.id, "yes, go")


async def test_a_client_tool_call_nobody_answers_becomes_an_error_the_model_reads(
    agent_client: AgentClient,
):
    options = SessionOptions(run=RunOptions(client_tool_timeout=timedelta(seconds=1)))
    async with build_worker(agent_client, AGENTS):
        session = await agent_client.start_session("confirmer", options=options)
        result = await session.send("v3", client_tools=[CONFIRM])
        await session.close()
    assert result.output == (
        "Not confirmed: Error: the client sent no result within 1 s; the call may not have run."
    )


async def test_without_the_client_tool_the_model_is_told_there_is_none(
    agent_client: AgentClient,
):
    async with build_worker(agent_client, AGENTS):
        session = await agent_client.start_session("confirmer")
        result = await session.send("v4")  # no client tools offered
        await session.close()
    assert result.output.startswith("Not confirmed: Error: there is no tool named 'confirm'")


async def test_a_single_run_offers_client_tools_and_takes_their_results(
    agent_client: AgentClient,
):
    async with build_worker(agent_client, AGENTS):
        options = RunOptions(client_tools=[CONFIRM])
        run = await agent_client.start_run("confirmer", "v5", options=options)
        (view,) = await run.wait_for_pending()
        assert view.action.kind == "client"
        with pytest.raises(InvalidInputError, match="waits for no client tool call 'other'"):
            await run.provide_tool_result("other", "yes")
        await run.provide_tool_result(view.action.id, "no", is_error=True, message_id="m-1")
        result = await run.result()
        thread = await run.thread()
    assert result.output == "Not confirmed: no"
    (answer,) = [m for m in thread.messages if m.role == "tool"]
    assert (answer.id, answer.is_error) == ("m-1", True)


async def test_client_tools_with_bad_or_repeated_names_are_refused_saying_so(
    agent_client: AgentClient,
):
    with pytest.raises(ValueError, match="1 to 64 letters, digits, '_' or '-'"):
        ClientTool(name="ask the user")
    with pytest.raises(InvalidOptionsError, match="offers 'confirm' twice"):
        RunOptions(client_tools=[CONFIRM, CONFIRM]).check()
    session = agent_client.get_session("never-started")
    with pytest.raises(InvalidInputError, match="offers 'confirm' twice; name each tool once"):
        await session.submit("v6", client_tools=[CONFIRM, CONFIRM])
