"""Worker processes stopped with SIGTERM or SIGINT in the middle of a run: they drain."""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from pathlib import Path

from temporalio.api.enums.v1 import EventType, TimeoutType

from ratchet.client import AgentClient

from ..conftest import release
from ..history import attempts, events, of_type
from ..logged_agents import EventLog
from .test_durability import OPTIONS, wait_for_event

DRAINING = "worker draining"


async def test_a_tool_call_running_at_sigterm_finishes_and_does_not_run_again(
    agent_client: AgentClient, worker_processes, event_log: Path
):
    log = EventLog(event_log)
    first = worker_processes()
    handle = await agent_client.start_run("steps", "do three steps", options=OPTIONS)
    release(event_log, handle.id, 1)
    await wait_for_event(log, lambda r: r["kind"] == "tool_start" and r["n"] == 2)
    second = worker_processes()  # idle until the first one drains: the run is in its turn
    first.send_signal(signal.SIGTERM)
    await asyncio.to_thread(first.wait_for, DRAINING)
    release(event_log, handle.id, 2)  # the tool finishes after its worker got SIGTERM
    assert await asyncio.to_thread(first.wait_exit) == 0
    release(event_log, handle.id, 3)
    result = await handle.result()

    assert result.output == "all 3 steps done"
    records = log.read()
    # Step 2 ran once, to its end, on the draining worker; the rest of the run moved.
    starts = [(r["n"], r["pid"]) for r in records if r["kind"] == "tool_start"]
    assert starts == [(1, first.pid), (2, first.pid), (3, second.pid)]
    assert Counter(r["n"] for r in records if r["kind"] == "tool_end") == {1: 1, 2: 1, 3: 1}
    assert Counter(r["turn"] for r in records if r["kind"] == "model") == {1: 1, 2: 1, 3: 1, 4: 1}
    assert await attempts(handle) == [1, 1, 1, 1]
    assert "worker stopped" in first.output
    # The draining worker gave up its sticky queue: at most one workflow task waited
    # for it, by one of the SDK's shutdown races (Ratchet cannot close them in
    # temporalio 1.35): a turn that ends before the server hears of the drain sends
    # the next task to the sticky queue, which moves it after 3 s (schedule-to-start);
    # a poll the server answers as the worker stops polling is dropped, and the task
    # is retried after its 10 s timeout (start-to-close; sdk-rust#1080).
    timed_out = of_type(await events(handle), EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT)
    assert len(timed_out) <= 1


async def test_a_turn_outlasting_the_grace_period_resumes_elsewhere_from_its_checkpoint(
    agent_client: AgentClient, worker_processes, event_log: Path
):
    log = EventLog(event_log)
    first = worker_processes("--grace-period", "0.5")
    handle = await agent_client.start_run("steps", "do three steps", options=OPTIONS)
    release(event_log, handle.id, 1)
    await wait_for_event(log, lambda r: r["kind"] == "tool_start" and r["n"] == 2)
    # Step 2 stays blocked until its worker has exited: the grace period runs out.
    first.send_signal(signal.SIGINT)
    assert await asyncio.to_thread(first.wait_exit) == 0
    assert "turns in flight get 0.5 s to finish" in first.output
    assert "Turn 2 (attempt 1) of agent 'steps' stopped: its worker's grace period" in first.output

    second = worker_processes()
    release(event_log, handle.id, 2)
    release(event_log, handle.id, 3)
    result = await handle.result()

    assert result.output == "all 3 steps done"
    records = log.read()
    # Turn 2's model reply was checkpointed before its tool started: the new worker
    # reused it and ran only the interrupted tool again; turn 1 did not run again.
    assert Counter(r["turn"] for r in records if r["kind"] == "model") == {1: 1, 2: 1, 3: 1, 4: 1}
    starts = [(r["n"], r["attempt"], r["pid"]) for r in records if r["kind"] == "tool_start"]
    assert starts == [(1, 1, first.pid), (2, 1, first.pid), (2, 2, second.pid), (3, 1, second.pid)]
    assert Counter(r["n"] for r in records if r["kind"] == "tool_end") == {1: 1, 2: 1, 3: 1}
    assert await attempts(handle) == [1, 2, 1, 1]
    # The cancelled attempt failed as retryable (no wait for a heartbeat timeout), and
    # the run was not cancelled.
    started = of_type(await events(handle), EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED)
    failure = started[1].activity_task_started_event_attributes.last_failure
    assert failure.application_failure_info.type == "WorkerShutdown"
    assert not failure.application_failure_info.non_retryable


async def test_a_second_signal_while_draining_stops_the_worker_at_once(
    agent_client: AgentClient, worker_processes, event_log: Path
):
    log = EventLog(event_log)
    first = worker_processes("--grace-period", "600")
    handle = await agent_client.start_run("steps", "do three steps", options=OPTIONS)
    release(event_log, handle.id, 1)
    await wait_for_event(log, lambda r: r["kind"] == "tool_start" and r["n"] == 2)
    first.send_signal(signal.SIGTERM)
    await asyncio.to_thread(first.wait_for, DRAINING)
    first.send_signal(signal.SIGINT)
    assert await asyncio.to_thread(first.wait_exit) == 128 + signal.SIGINT

    second = worker_processes()
    for n in (2, 3):
        release(event_log, handle.id, n)
    assert (await handle.result()).output == "all 3 steps done"
    records = log.read()
    # As after a crash: turn 1 did not run again; turn 2 was retried once its heartbeat
    # timed out (its model call too, if its checkpoint had not reached the server).
    model_calls = Counter(r["turn"] for r in records if r["kind"] == "model")
    assert model_calls[1] == 1 and model_calls[3] == 1 and model_calls[4] == 1
    retried = [r for r in records if r["kind"] == "tool_start" and r["n"] == 2]
    assert [(r["attempt"], r["pid"]) for r in retried] == [(1, first.pid), (2, second.pid)]
    started = of_type(await events(handle), EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED)
    timeout = started[1].activity_task_started_event_attributes.last_failure.timeout_failure_info
    assert timeout.timeout_type == TimeoutType.TIMEOUT_TYPE_HEARTBEAT
