"""Worker processes killed with SIGKILL in the middle of a run."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections import Counter
from datetime import timedelta
from pathlib import Path

from temporalio.api.enums.v1 import EventType, TimeoutType

from ratchet.client import AgentClient, RunHandle
from ratchet.wire import RunOptions, SessionOptions

from ..conftest import release
from ..history import attempts, events, of_type
from ..logged_agents import EventLog

HEARTBEAT = timedelta(seconds=3)
OPTIONS = RunOptions(
    heartbeat_timeout=HEARTBEAT,
    initial_retry_interval=timedelta(milliseconds=100),
)


async def wait_for_event(log: EventLog, predicate, within: float = 60) -> dict:
    """Wait until the event log holds a matching record (tools write it as they run)."""
    async with asyncio.timeout(within):
        while True:
            for record in log.read():
                if predicate(record):
                    return record
            await asyncio.sleep(0.02)


async def test_killed_worker_resumes_without_rerunning_completed_turns(
    agent_client: AgentClient, worker_processes, event_log: Path
):
    log = EventLog(event_log)
    first = worker_processes()
    handle = await agent_client.start_run("steps", "do three steps", options=OPTIONS)
    run = handle.id
    release(event_log, run, 1)
    await wait_for_event(log, lambda r: r["kind"] == "tool_start" and r["n"] == 2)
    killed_at = first.kill()

    second = worker_processes()
    release(event_log, run, 2)
    release(event_log, run, 3)
    result = await handle.result()

    assert result.output == "all 3 steps done"
    records = log.read()
    model_calls = Counter(r["turn"] for r in records if r["kind"] == "model")
    tool_ends = Counter(r["n"] for r in records if r["kind"] == "tool_end")
    # Turn 1 completed before the kill: neither its model call nor its tool ran again.
    assert model_calls[1] == 1 and tool_ends[1] == 1
    assert model_calls[3] == 1 and model_calls[4] == 1
    # The new worker had never seen the thread; it fetched it whole from the workflow.
    seen = {r["turn"]: r["messages"] for r in records if r["kind"] == "model"}
    assert seen == {1: 1, 2: 3, 3: 5, 4: 7}
    assert tool_ends == {1: 1, 2: 1, 3: 1}
    # The interrupted turn 2 ran again on the new worker once its heartbeat timed out.
    retry = next(
        r for r in records if r["kind"] == "tool_start" and r["n"] == 2 and r["pid"] == second.pid
    )
    assert retry["attempt"] == 2 and retry["time"] > killed_at
    assert {r["pid"] for r in records if r["kind"] == "tool_end"} == {first.pid, second.pid}
    assert await attempts(handle) == [1, 2, 1, 1]
    started = of_type(await events(handle), EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED)
    retried = started[1].activity_task_started_event_attributes
    assert (
        retried.last_failure.timeout_failure_info.timeout_type == TimeoutType.TIMEOUT_TYPE_HEARTBEAT
    )


async def test_two_workers_share_runs_and_losing_one_loses_nothing(
    agent_client: AgentClient, worker_processes, event_log: Path
):
    log = EventLog(event_log)
    # Two turns at a time per worker: six blocked runs must spread over both.
    a = worker_processes("--max-concurrent-turns", "2")
    b = worker_processes("--max-concurrent-turns", "2")
    handles = [await agent_client.start_run("steps", f"run {i}", options=OPTIONS) for i in range(6)]
    holders: dict[str, int] = {}
    async with asyncio.timeout(60):
        while len(holders) < 4:
            for r in log.read():
                if r["kind"] == "tool_start" and r["n"] == 1:
                    holders[r["run"]] = r["pid"]
            await asyncio.sleep(0.02)
    assert Counter(holders.values()) == {a.pid: 2, b.pid: 2}

    a.kill()
    for handle in handles:
        for n in (1, 2, 3):
            release(event_log, handle.id, n)
    results = await asyncio.gather(*(h.result() for h in handles))

    assert [r.output for r in results] == ["all 3 steps done"] * 6
    ends = Counter((r["run"], r["n"]) for r in log.read() if r["kind"] == "tool_end")
    assert set(ends) == {(h.id, n) for h in handles for n in (1, 2, 3)}
    assert all(count == 1 for count in ends.values())
    b_turns = {r["run"] for r in log.read() if r["kind"] == "tool_end" and r["pid"] == b.pid}
    assert b_turns == {h.id for h in handles}


async def test_a_session_resumes_on_another_worker_after_a_kill_mid_send(
    agent_client: AgentClient, worker_processes, event_log: Path
):
    log = EventLog(event_log)
    first = worker_processes()
    session = await agent_client.start_session("steps", options=SessionOptions(run=OPTIONS))
    sent = asyncio.ensure_future(session.send("do three steps"))
    release(event_log, session.id, 1)
    await wait_for_event(log, lambda r: r["kind"] == "tool_start" and r["n"] == 2)
    first.kill()

    second = worker_processes()
    release(event_log, session.id, 2)
    release(event_log, session.id, 3)
    result = await sent
    thread = await session.thread()

    assert result.output == "all 3 steps done"
    records = log.read()
    # Turn 1 finished before the kill and did not run again (turn 2's model call may,
    # if its checkpoint had not reached the server); the new worker, which had never
    # seen the session, paged the whole log in (the user's message included).
    model_calls = Counter(r["turn"] for r in records if r["kind"] == "model")
    assert model_calls[1] == 1 and model_calls[3] == 1 and model_calls[4] == 1
    seen = {r["turn"]: r["messages"] for r in records if r["kind"] == "model"}
    assert seen == {1: 1, 2: 3, 3: 5, 4: 7}
    assert {r["pid"] for r in records if r["kind"] == "tool_end"} == {first.pid, second.pid}
    assert [m.role for m in thread.messages] == ["user", *["assistant", "tool"] * 3, "assistant"]


async def streamed(handle: RunHandle, turn: int) -> dict[int, str]:
    """What a watcher following the run live saw streamed for ``turn``, by attempt."""
    said: dict[int, str] = {}
    async for event in handle.events():
        if event.kind == "text_delta" and event.turn == turn:
            said[event.attempt] = said.get(event.attempt, "") + (event.text or "")
    return said


async def test_a_finished_model_call_is_not_made_again_after_a_kill_right_after_it(
    agent_client: AgentClient, worker_processes, event_log: Path
):
    # Default options. The model answers at once or in 0.05, 0.5 or 3 s, streaming its
    # words to a watcher; its worker is SIGKILLed 0.1 s into the tool call that
    # follows. The reply was acknowledged before the tool started (the SDK's own
    # heartbeat, throttled to 0.8 of the heartbeat timeout, would not have carried it
    # yet, and none sent earlier may replace it), so the retried attempt takes it
    # from there instead of calling the model again.
    log = EventLog(event_log)
    workers = [worker_processes(), worker_processes()]
    runs = []
    for latency in (0.0, 0.05, 0.5, 3.0):
        plan = json.dumps({"latency": latency, "kill_after": 0.1})
        handle = await agent_client.start_run("crash", plan)
        watcher = asyncio.ensure_future(streamed(handle, 1))
        run = handle.id
        await wait_for_event(log, lambda r, run=run: r["kind"] == "kill" and r["run"] == run)
        replacement = worker_processes()  # while the server waits out the heartbeat timeout
        assert (await handle.result()).output == "worked"
        # The killed attempt's words, if they left before the kill; never the retry's.
        assert set(await watcher) <= {1}
        runs.append(run)
        workers = [w for w in (*workers, replacement) if w.process.poll() is None]
        assert len(workers) == 2  # the one that ran the first attempt killed itself

    records = log.read()
    for run in runs:
        mine = [r for r in records if r.get("run") == run]
        assert [r["kind"] for r in mine if r["kind"].startswith("model")] == [
            "model_start",
            "model_end",
            "model_start",  # turn 2's
            "model_end",
        ]
        starts = [r for r in mine if r["kind"] == "tool_start"]
        kill = next(r for r in mine if r["kind"] == "kill")
        # The retried tool call is the same call: same call id, same idempotency key.
        assert [r["attempt"] for r in starts] == [1, 2]
        assert starts[0]["key"] == starts[1]["key"] and starts[0]["call"] == starts[1]["call"]
        assert starts[1]["pid"] != kill["pid"]


async def test_a_stale_attempt_starts_no_tool_after_another_attempt_finished_its_turn(
    agent_client: AgentClient, worker_processes, event_log: Path, task_queue: str
):
    log = EventLog(event_log)
    # Workflows on one worker, turns on another task queue: the worker that stalls
    # holds no workflow task and, with one turn slot taken, polls for no other turn.
    turns = f"{task_queue}-turns"
    worker_processes()
    stalled = worker_processes("--task-queue", turns, "--max-concurrent-turns", "1")
    options = RunOptions(task_queue=turns, initial_retry_interval=timedelta(milliseconds=100))
    handle = await agent_client.start_run("crash", json.dumps({"hold": True}), options=options)
    await wait_for_event(log, lambda r: r["kind"] == "model_start" and r["attempt"] == 1)
    # Frozen mid-model-call: it misses its heartbeats, the server gives the turn to
    # another worker, which finishes the run.
    os.kill(stalled.pid, signal.SIGSTOP)
    try:
        worker_processes("--task-queue", turns)
        assert (await handle.result()).output == "worked"
    finally:
        os.kill(stalled.pid, signal.SIGCONT)
    release(event_log, handle.id, "model")  # the stale attempt's model call returns now

    # It stops at its check before the tool call (StaleAttemptError), or, if the SDK's
    # own heartbeat hears first that the attempt is gone, it is cancelled.
    async with asyncio.timeout(60):
        while not (  # noqa: ASYNC110 - output pumped by a thread, a file another process writes
            "no longer knows this attempt" in stalled.output
            or any(r["kind"] == "model_cancelled" for r in log.read())
        ):
            await asyncio.sleep(0.05)
    starts = [r for r in log.read() if r["kind"] == "tool_start"]
    assert [r["attempt"] for r in starts] == [2]
    assert all(r["pid"] != stalled.pid for r in starts)
    assert stalled.process.poll() is None  # the worker lives on


async def test_a_tool_result_is_sent_when_recorded_and_once_after_its_worker_dies(
    agent_client: AgentClient, worker_processes, event_log: Path
):
    """Step 1's result reaches watchers while step 2 still runs; the worker then dies,
    and the retried turn gets step 1 back without telling it again."""
    first = worker_processes()
    handle = await agent_client.start_run("pair", "do both steps", options=OPTIONS)
    release(event_log, handle.id, 1)
    seen, one_out = [], asyncio.Event()

    async def watch() -> None:
        async for event in handle.events():
            seen.append(event)
            if event.kind == "tool_result":
                one_out.set()

    watching = asyncio.ensure_future(watch())
    await asyncio.wait_for(one_out.wait(), 60)  # before the turn ends: step 2 waits
    first.kill()
    worker_processes()
    release(event_log, handle.id, 2)
    result = await handle.result()
    await asyncio.wait_for(watching, 60)

    assert result.output == "both steps done"
    calls = [e.data.id for e in seen if e.kind == "tool_call"]
    results = [(e.text, e.attempt) for e in seen if e.kind == "tool_result"]
    assert sorted(calls) == ["call_0_0", "call_0_1"]  # each once
    # Step 1's result rode alone after a wait (nothing else was sent); step 2's, with no
    # batch to ride on before the turn ended, came with the turn's result (attempt 0).
    assert results == [("step 1 done", 1), ("step 2 done", 0)]
    kinds = [e.kind for e in seen]
    assert kinds.index("tool_result") < kinds.index("retry") < kinds.index("turn_completed")
