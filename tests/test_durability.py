"""Worker processes killed with SIGKILL in the middle of a run."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import timedelta
from pathlib import Path

from ratchet.workflows import AgentClient, RunOptions, SessionOptions

from .agents import EventLog
from .conftest import release
from .history import attempts

HEARTBEAT = timedelta(seconds=3)
STICKY = timedelta(seconds=3)
"""build_worker's sticky timeout: how long a query waits for a dead worker's workflow."""
OPTIONS = RunOptions(
    heartbeat_timeout=HEARTBEAT,
    initial_retry_interval=timedelta(milliseconds=100),
    # By reference even while small: the second worker must page the thread in.
    thread_mode="reference",
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
    # The interrupted turn 2 ran again on the new worker once the heartbeat timed out;
    # paging the thread in from the workflow waited for the workflow to leave the dead
    # worker's sticky queue.
    retry = next(
        r for r in records if r["kind"] == "tool_start" and r["n"] == 2 and r["pid"] == second.pid
    )
    assert retry["attempt"] == 2
    assert retry["time"] - killed_at < (HEARTBEAT + STICKY).total_seconds() + 3.0
    assert {r["pid"] for r in records if r["kind"] == "tool_end"} == {first.pid, second.pid}
    assert await attempts(handle) == [1, 2, 1, 1]


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
