"""Followers under faults: a read that fails for a moment (a worker killed or
draining, the query buffer full) is made again, readers of one session in a process
share their queries, and a reader gets every event once, in order, or
``EventsExpiredError``, never a short normal end (``ratchet.client._event_reader``)."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import time
from collections.abc import Callable
from datetime import timedelta

import pytest

from ratchet.agents import Agent, Result, RunContext, Thread
from ratchet.client import AgentClient
from ratchet.client import _earlier_runs as earlier_runs
from ratchet.client import _follow as follow
from ratchet.client._event_reader import numbered_events
from ratchet.devserver import DevServer
from ratchet.errors import EventsExpiredError
from ratchet.testing import WorkerProcess
from ratchet.types import Message, RunEvent
from ratchet.wire import SessionOptions
from ratchet.worker import build_worker

from ..conftest import ROOT

READER_LOG = "ratchet.client._event_reader"


class Emitter(Agent):
    """Emits as many events as its message says (``"300"``); ``"slow 300"`` first
    lives over a second (so the run after it starts at once), ``"busy 300"`` spaces
    them out (a signal each)."""

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        *how, count = messages[-1].text.split()
        if how == ["slow"]:
            await asyncio.sleep(1.5)  # the workload: a run that lives over a second
        for n in range(int(count)):
            await context.emit({"n": n})
            if how == ["busy"]:
                await asyncio.sleep(0.005)
        return Result(final_response=Message.assistant(f"emitted {count}"))


class Reader:
    """Follows a session's events; ``gate`` cleared, it stops at its next event."""

    def __init__(self, client: AgentClient, session_id: str) -> None:
        self.seen: list[tuple[int, RunEvent]] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.wake = asyncio.Event()
        self.moved = asyncio.Event()
        events = numbered_events(client.temporal, session_id, wake=self.wake)
        self.task = asyncio.ensure_future(self._read(events))

    async def _read(self, events) -> None:
        async for item in events:
            await self.gate.wait()
            self.seen.append(item)
            self.moved.set()

    async def reach(self, end: int) -> None:
        """Returns once the reader has read every event before ``end``."""
        while not self.seen or self.seen[-1][0] < end - 1:
            self.moved.clear()
            await first(self.moved.wait(), self.task)
            if self.task.done():
                self.task.result()  # raises what ended it
                raise AssertionError(f"the reader ended at {self.seen[-1][0]}, before {end}")

    def offsets(self) -> list[int]:
        return [at for at, _ in self.seen]


async def first(*waits) -> None:
    """Waits until one of ``waits`` (coroutines or tasks) is done."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            if not any(task is w for w in waits):
                task.cancel()


class Retries(logging.Handler):
    """Sets ``seen`` when a reader logs that it reads again after a failure."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.seen = asyncio.Event()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
        self.seen.set()


@pytest.fixture
def retries():
    handler, logger = Retries(), logging.getLogger(READER_LOG)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


@pytest.mark.timeout(240)
async def test_a_follower_across_a_killed_and_a_draining_worker_gets_every_event_once_in_order(
    agent_client: AgentClient,
    temporal_server: DevServer,
    task_queue: str,
    retries: Retries,
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setattr(earlier_runs, "QUERY_TIMEOUT", 2.0, raising=False)  # a dead worker: 30 s

    def worker() -> WorkerProcess:
        env = {"PYTHONPATH": str(ROOT)}
        return WorkerProcess(temporal_server, task_queue, "tests.web_agents:AGENTS", env=env)

    async def outage(reader: Reader) -> None:
        """The reader queries now (woken), fails and reads again: it must not end."""
        retries.seen.clear()
        reader.wake.set()
        await first(retries.seen.wait(), reader.task)
        if reader.task.done():
            reader.task.result()  # today: the raw RPCError
            raise AssertionError("the reader ended during the outage")

    workers = [worker()]
    try:
        await asyncio.to_thread(workers[-1].wait_ready)
        session = await agent_client.start_session(
            "slow", options=SessionOptions(continue_as_new_after_runs=2)
        )
        reader = Reader(agent_client, session.id)
        await session.send("one")
        await reader.reach(await session.event_offset())

        workers[-1].kill()  # a crashed machine: its queries get no answer
        await outage(reader)
        workers.append(worker())
        await asyncio.to_thread(workers[-1].wait_ready)
        await session.send("two")
        await reader.reach(await session.event_offset())

        await session.submit("three")  # a turn in flight while its worker drains
        await reader.reach(await session.event_offset() + 3)
        workers[-1].send_signal(signal.SIGTERM)
        await asyncio.to_thread(workers[-1].wait_for, "worker draining")
        await outage(reader)
        workers.append(worker())
        await asyncio.to_thread(workers[-1].wait_ready)
        await session.close()
        await asyncio.wait_for(reader.task, 60)  # ends by itself, once the session closed
        end = await session.event_offset()
    finally:
        for process in workers:
            process.stop()
    assert reader.offsets() == list(range(end))  # every event once, in order
    finished = [e for _, e in reader.seen if e.kind == "run_finished"]
    assert len(finished) == 3
    assert retries.messages  # it did read again


async def test_three_readers_of_a_busy_session_all_get_every_event(
    agent_client: AgentClient, monkeypatch: pytest.MonkeyPatch
):
    polls = Polls(monkeypatch)
    async with build_worker(
        agent_client, {"emitter": Emitter()}, live_events=timedelta(milliseconds=5)
    ):
        session = await agent_client.start_session(
            "emitter", options=SessionOptions(continue_as_new_after_runs=2)
        )
        readers = [Reader(agent_client, session.id) for _ in range(3)]
        for _ in range(3):
            await session.send("busy 150")  # a signal every few milliseconds
        end = await session.event_offset()
        for reader in readers:
            await reader.reach(end)
        await session.close()
        for reader in readers:
            await asyncio.wait_for(reader.task, 60)
        end = await session.event_offset()
    for reader in readers:
        assert reader.offsets() == list(range(end))
    # One poll at a time for the three, shared where it covers them.
    assert polls.most_at_once == 1, polls.most_at_once


class Polls:
    """Counts the stream polls in flight at once in this process."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = self.most_at_once = 0
        original = earlier_runs.poll

        async def counted(handle, offset):
            self.now += 1
            self.most_at_once = max(self.most_at_once, self.now)
            try:
                return await original(handle, offset)
            finally:
                self.now -= 1

        for name in ("_earlier_runs", "_event_reader", "_shared_poll"):
            module = sys.modules.get(f"ratchet.client.{name}")
            if module is not None and hasattr(module, "poll"):
                monkeypatch.setattr(module, "poll", counted)


async def test_a_reader_too_far_behind_at_the_close_gets_the_gap_error_not_a_short_end(
    agent_client: AgentClient, monkeypatch: pytest.MonkeyPatch
):
    """Paused while a run continued as new with its next run's first task delayed
    (the watch names the closed run meanwhile), then over 500 events more, then the
    close: the reader must not end after reading that closed run."""
    watches = watched(monkeypatch)
    async with build_worker(agent_client, {"emitter": Emitter()}):
        session = await agent_client.start_session(
            "emitter", options=SessionOptions(continue_as_new_after_runs=1)
        )
        reader = Reader(agent_client, session.id)
        await session.send("5")
        await reader.reach(await session.event_offset())
        reader.gate.clear()  # stops at its next event
        await session.send("100")  # a run under a second: the next one's start is delayed
        await session.send("slow 600")  # over 500 more; the run after it starts at once
        await session.close()
        await until(lambda: all(w.closed for w in watches), 30)
        reader.gate.set()
        with pytest.raises(EventsExpiredError) as raised:
            await asyncio.wait_for(reader.task, 60)
        end = await session.event_offset()
    at = reader.offsets()
    assert at == list(range(len(at)))  # in order, each once, up to the gap
    assert raised.value.requested == len(at) < end - 500


def watched(monkeypatch: pytest.MonkeyPatch) -> list[follow.HistoryWatch]:
    """The history watches made from now on (to know when they saw the close)."""
    made: list[follow.HistoryWatch] = []
    init = follow.HistoryWatch.__init__

    def recorded(self, *args, **kwargs) -> None:
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(follow.HistoryWatch, "__init__", recorded)
    return made


async def until(condition: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)
