"""Conversations that outlive Temporal's retention of their closed workflow runs.

A dev server whose namespace keeps closed runs for 10 seconds deletes them itself,
as Temporal Cloud does after 1 to 90 days. What the session still relies on is
re-anchored before that (half the retention by default, read from the namespace),
and what was lost anyway is named, never a dead session. Each check runs in a
process of its own, with a fresh client, worker and caches.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
from temporalio.client import WorkflowExecutionStatus

from ratchet.agents import ScriptedModel
from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.errors import CheckpointGoneError, InvalidInputError
from ratchet.wire import RunOptions, SessionOptions
from ratchet.worker import build_worker

from ..conftest import ROOT
from ..hitl_agents import Ledger, payment_agent
from ..workflows.test_sessions import Echo
from .retention import namespace_with_retention, start_server, wait_until_gone
from .test_closed_after_continue_as_new import run_with_0_1_0

pytestmark = pytest.mark.slow  # a dev server of its own, and checks in child processes


@pytest.fixture(scope="module")
def retention_server():
    server = start_server()
    yield server
    server.stop()


async def read_elsewhere(
    server: DevServer, client: AgentClient, session_id: str, send: str | None = None
) -> dict:
    """The session's thread (and an answer to ``send``), read by a new process."""
    args = [server.address, client.temporal.namespace, client.task_queue, session_id]
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "tests.durability.retention", *args, *([send] if send else [])],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


async def closed_runs(client: AgentClient, workflow_id: str) -> list[str]:
    """The runs of ``workflow_id`` that continued as new, as visibility lists them."""
    runs = client.temporal.list_workflows(f"WorkflowId = '{workflow_id}'")
    return [r.run_id async for r in runs if r.status == WorkflowExecutionStatus.CONTINUED_AS_NEW]


async def anchored_soon(client: AgentClient, workflow_id: str) -> bool:
    """Whether the workflow's latest run copies its log (a ``ratchet.anchor`` activity
    completes) within 30 s."""
    loop = asyncio.get_running_loop()
    until = loop.time() + 30
    while loop.time() < until:
        history = await client.temporal.get_workflow_handle(workflow_id).fetch_history()
        done = EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
        if any(e.event_type == done for e in history.events):
            return True
        await asyncio.sleep(0.2)
    return False


async def event_types(client: AgentClient, workflow_id: str) -> list[EventType.ValueType]:
    history = await client.temporal.get_workflow_handle(workflow_id).fetch_history()
    return [e.event_type for e in history.events]


async def test_a_session_and_its_fork_outlive_the_retention_of_their_closed_runs(
    retention_server: DevServer,
):
    namespace = await namespace_with_retention(retention_server, timedelta(seconds=10))
    client = await AgentClient.connect(
        retention_server.address, namespace=namespace, task_queue="retention"
    )
    # The horizon is the default: half the namespace's retention, read from Temporal.
    options = SessionOptions(continue_as_new_after_runs=1)
    async with build_worker(client, {"echo": Echo}):
        session = await client.start_session("echo", options=options)
        for text in ("one", "two", "three"):
            await session.send(text)
        fork = await client.fork(session.id, at_turn=2)
        closed = await closed_runs(client, session.id)
        assert len(closed) == 3
        # The server deletes each closed run about 10 s after it closed; before that
        # the session and the fork copied what they rely on into their open runs.
        await wait_until_gone(client.temporal, session.id, closed, within=60)
        # Re-anchored by a durable timer (no message woke the session), once.
        types = await event_types(client, session.id)
        assert types.count(EventType.EVENT_TYPE_TIMER_FIRED) == 1
        assert types.count(EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) == 1  # one chunk

    kept = await read_elsewhere(retention_server, client, session.id, send="four")
    assert kept["gaps"] == []
    assert kept["texts"] == [
        "one", "#1 one (saw 1)", "two", "#2 two (saw 3)", "three", "#3 three (saw 5)",
    ]  # fmt: skip
    assert kept["answer"] == "#4 four (saw 7)"  # the agent saw the whole conversation
    forked = await read_elsewhere(retention_server, client, fork.id, send="fork")
    assert forked["gaps"] == []
    assert forked["texts"] == ["one", "#1 one (saw 1)", "two", "#2 two (saw 3)"]
    assert forked["answer"] == "#3 fork (saw 5)"
    # The fork holds its own copy: deleting its source neither refuses nor cuts it.
    # (A worker runs meanwhile: the fork's newest run relies on the one before, which
    # the 10 s retention soon deletes, and copies it after 5 s.)
    async with build_worker(client, {"echo": Echo}):
        deleted = await client.delete_session(session.id)
        assert deleted.found and deleted.forks == []
        again = await read_elsewhere(retention_server, client, fork.id)
    assert again["texts"][:4] == forked["texts"] and again["gaps"] == []


async def test_a_history_already_gone_is_a_named_gap_and_the_session_goes_on(
    retention_server: DevServer,
):
    namespace = await namespace_with_retention(retention_server, timedelta(hours=2))
    client = await AgentClient.connect(
        retention_server.address, namespace=namespace, task_queue="gone"
    )
    # A horizon the retention does not outlast is refused before anything starts.
    with pytest.raises(InvalidInputError, match=r"not shorter than namespace .* retention"):
        await client.start_session("echo", options=SessionOptions(horizon=timedelta(hours=2)))
    # A horizon the test never reaches: the first run goes before it is re-anchored.
    options = SessionOptions(continue_as_new_after_runs=1, horizon=timedelta(hours=1))
    async with build_worker(client, {"echo": Echo}):
        session = await client.start_session("echo", options=options)
        for text in ("one", "two"):
            await session.send(text)
    first = (await closed_runs(client, session.id))[-1]  # newest first: the oldest is last
    await client.temporal.workflow_service.delete_workflow_execution(
        DeleteWorkflowExecutionRequest(
            namespace=namespace,
            workflow_execution=WorkflowExecution(workflow_id=session.id, run_id=first),
        )
    )
    await wait_until_gone(client.temporal, session.id, [first], within=60)

    found = await read_elsewhere(retention_server, client, session.id, send="three")
    assert found["gaps"] == [{"start": 0, "end": 2, "workflow_id": session.id, "run_id": first}]
    assert found["texts"][0].startswith("[2 earlier message(s) of this conversation")
    assert found["texts"][2:] == ["two", "#2 two (saw 3)"]
    # The send ran: the agent saw what remains, the placeholders where the gap is.
    assert found["answer"] == "#3 three (saw 5)"
    # A fork at a turn whose mark only the deleted run held is refused, naming the
    # first it can take; a later one starts, its checkpoint naming the gap it inherits.
    fresh = await AgentClient.connect(
        retention_server.address, namespace=namespace, task_queue="gone"
    )
    with pytest.raises(CheckpointGoneError) as lost:
        await fresh.checkpoint(session.id, at_turn=0)  # only the deleted run held it
    assert lost.value.first_turn == 1 and lost.value.run_id == first
    assert "Fork at turn 1 or later" in str(lost.value)
    later = await fresh.checkpoint(session.id, at_turn=2)
    assert [g.model_dump() for g in later.gaps] == found["gaps"]
    assert [m.text for m in later.messages][2:] == ["two", "#2 two (saw 3)"]
    async with build_worker(fresh, {"echo": Echo}):
        shown = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "ratchet", "sessions", "show", session.id, "--messages",
             "20", "--address", retention_server.address, "--namespace", namespace],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert f"gone: messages 0-1 (Temporal no longer has run {first}, which" in shown.stdout


async def test_a_single_run_continued_as_new_outlives_the_retention_of_its_closed_runs(
    retention_server: DevServer,
):
    namespace = await namespace_with_retention(retention_server, timedelta(seconds=10))
    client = await AgentClient.connect(
        retention_server.address, namespace=namespace, task_queue="single-run"
    )
    replies = [
        ScriptedModel.call("lookup", name="acme"),
        ScriptedModel.call("lookup", name="bob"),
        ScriptedModel.call("pay", to="acme", amount=500),  # waits for an approval
    ]
    options = RunOptions(continue_as_new_after_turns=1)
    async with build_worker(client, {"pay": payment_agent(Ledger(), replies)}):
        run = await client.start_run("pay", "pay acme after the lookups", options=options)
        (waiting,) = await run.wait_for_pending()
        closed = await closed_runs(client, run.id)
        assert len(closed) == 2
        # Waiting, the run copies what its two closed runs hold before they go.
        await wait_until_gone(client.temporal, run.id, closed, within=60)

    # A fresh client and worker (no cache holds the log): the run reads its whole
    # thread from its open run's history and finishes.
    fresh = await AgentClient.connect(
        retention_server.address, namespace=namespace, task_queue="single-run"
    )
    ledger = Ledger()
    async with build_worker(fresh, {"pay": payment_agent(ledger, replies)}):
        handle = fresh.get_run(run.id)
        thread = await handle.thread()
        assert thread.gaps == []
        assert [m.text for m in thread.messages if m.role == "tool"] == [
            "acme: IBAN NL00", "bob: IBAN NL00",
        ]  # fmt: skip
        await handle.approve(waiting.action.id, by="test")
        result = await handle.result()
    assert result.output == "done: acme: IBAN NL00 | bob: IBAN NL00 | paid 500 to acme"
    assert ledger.payments == [("acme", 500, 1)]


START_WITH_0_1_0 = """
import asyncio, sys
from ratchet.process import hard_exit
from ratchet.agents import Agent, Message, Result
from ratchet.client import AgentClient
from ratchet.wire import SessionOptions
from ratchet.worker import build_worker

class Echo(Agent):
    async def run(self, messages, thread, context):
        await thread.on_new_messages(messages)
        seen = len(thread.messages)
        return Result(final_response=Message.assistant(f"{messages[-1].text} (saw {seen})"))

async def main():
    address, namespace, queue = sys.argv[1:]
    client = await AgentClient.connect(address, namespace=namespace, task_queue=queue)
    async with build_worker(client, {"echo": Echo}):
        for _ in range(2):
            session = await client.start_session(
                "echo", options=SessionOptions(continue_as_new_after_runs=1)
            )
            await session.send("one")
            await session.send("two")
            print(session.id)

asyncio.run(main())
hard_exit(0)
"""


async def test_a_session_started_on_0_1_0_is_reanchored_when_asked(
    retention_server: DevServer, tmp_path: Path
):
    namespace = await namespace_with_retention(retention_server, timedelta(hours=1))
    client = await AgentClient.connect(
        retention_server.address, namespace=namespace, task_queue="from-0-1-0"
    )
    printed = await run_with_0_1_0(
        tmp_path, START_WITH_0_1_0, retention_server.address, namespace, client.task_queue
    )
    session_id, moving_on = printed.split()[-2:]
    closed = await closed_runs(client, session_id)
    assert len(closed) == 2  # its open run relies on both, and 0.1.0 set no timer

    async with build_worker(client, {"echo": Echo}):
        # A 0.1.0 session that continues as new on this code copies at once: the runs
        # it relies on are of an age 0.1.0 did not record.
        await client.get_session(moving_on).send("three")
        assert await anchored_soon(client, moving_on)
        anchored = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "ratchet", "sessions", "anchor", "--all",
             "--address", retention_server.address, "--namespace", namespace],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert anchored.returncode == 0, anchored.stderr
        assert f"{session_id}: 4 messages copied" in anchored.stdout
        again = await client.get_session(session_id).reanchor()
        assert again.messages == 0  # relies on no closed run now
    for run_id in closed:
        await client.temporal.workflow_service.delete_workflow_execution(
            DeleteWorkflowExecutionRequest(
                namespace=namespace,
                workflow_execution=WorkflowExecution(workflow_id=session_id, run_id=run_id),
            )
        )
    await wait_until_gone(client.temporal, session_id, closed, within=60)

    found = await read_elsewhere(retention_server, client, session_id, send="three")
    assert found["gaps"] == []
    assert found["texts"] == ["one", "one (saw 1)", "two", "two (saw 3)"]
    assert found["answer"] == "#1 three (saw 5)"  # this code's Echo counts its own visits
