"""Following a run or a session live, from outside (client side).

Events are read with the workflow stream's poll *query*, which writes nothing to
the workflow's history (the stream's own subscriber polls with an Update, and
each Update's completion is written to history). The query is asked when the
stream may have grown: ``HistoryWatch`` follows the workflow's history with the
server's long poll and wakes the reader at each completed workflow task, so a
quiet workflow costs no queries (one every ``SAFETY_POLL`` seconds). If the
history cannot be followed, a poll that finds nothing waits a little longer each
time, from ``MIN_POLL`` up to ``MAX_POLL``. Offsets are global and go on across
continue-as-new, so a query without a run id always reads the latest run.
Iteration ends when the workflow has closed and its retained events are read,
from the latest run (never from a run it continued). Readers of one workflow in
one process share the watch and take turns to query (``ratchet.client._shared_poll``).

What a reader gets: every event from its offset on, each once, or
``EventsExpiredError`` at the first one it can no longer have, never a silent
skip; every poll checks. A workflow run holds its last 2,000 events at least
(``EVENTS_KEPT``), and a continue-as-new carries only the latest few into the
new run: a reader whose offset is older than the current run holds, and at most
``RETAINED`` (500) events behind the end, reads the gap from the runs before
(``ratchet.client._earlier_runs``); further behind it gets the error. A reader
that starts from offset 0 starts at the oldest event held, the last 500 at
least; from its first read on, its offset is where it is (0 included).

A read that fails for a reason that may pass (a worker killed or draining, the
server's query buffer full, Temporal out of reach) is made again, with backoff,
for up to ``RETRY_FOR`` seconds; then ``EventsUnavailableError`` names the offset
to follow on from. Nothing is skipped meanwhile.

A session's messages run in the session workflow, so its stream holds
everything its runs do.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import timedelta
from functools import partial
from typing import TypeVar

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.contrib.workflow_streams import PollResult

from ratchet._temporal_internals import decode_stream_payload
from ratchet.errors import EventsExpiredError, EventsUnavailableError, InvalidInputError
from ratchet.history import closed_run, held_events
from ratchet.types import RunEvent
from ratchet.wire import OFFSET_QUERY

from . import _earlier_runs as earlier_runs
from ._earlier_runs import earlier_events, held_from, poll
from ._follow import HistoryWatch
from ._retries import passing, retrying
from ._shared_poll import SharedPoll, shared_poll

T = TypeVar("T")

MIN_POLL = 0.05
MAX_POLL = 1.0
SAFETY_POLL = 30.0
"""While the history is followed, a quiet stream is still queried this often."""
RETAINED = 500
"""Events behind the end a reader may be and still get every one, whatever
continued as new meanwhile."""
RETRY_FOR = 120.0
"""Seconds a reader reads again after failures that may pass, before it gives up."""
RUNNING = (WorkflowExecutionStatus.RUNNING, WorkflowExecutionStatus.CONTINUED_AS_NEW)

log = logging.getLogger(__name__)


def start_offset(after: int | None, from_offset: int) -> int:
    """Where ``events(after=..., from_offset=...)`` starts: right after the offset of
    the last event a watcher handled, or at ``from_offset``."""
    if after is None:
        return from_offset
    if from_offset:
        raise InvalidInputError(
            f"Pass after={after} or from_offset={from_offset}, not both: after=N resumes "
            "at N + 1 (N: the offset of the last event you handled)."
        )
    if after < -1:
        raise InvalidInputError(f"after={after}: an event's offset is 0 or more (-1: from 0).")
    return after + 1


async def run_events(
    client: Client, workflow_id: str, *, from_offset: int = 0, strict: bool = True
) -> AsyncIterator[RunEvent]:
    """The events of one workflow (a run, or a session), in order, each once, each
    with its ``offset``."""
    events = numbered_events(client, workflow_id, from_offset=from_offset, strict=strict)
    async for _, event in events:
        yield event


async def numbered_events(
    client: Client,
    workflow_id: str,
    *,
    from_offset: int = 0,
    strict: bool = True,
    wake: asyncio.Event | None = None,
    resent: Resent | None = None,
) -> AsyncIterator[tuple[int, RunEvent]]:
    """``run_events`` with each event's offset in the stream (its resumable id:
    ``from_offset=offset + 1`` continues after it). Raises ``EventsExpiredError``
    at the first event the reader can no longer have (see the module's docstring);
    ``strict=False`` skips ahead to what the stream holds instead. Setting
    ``wake`` ends an idle wait at once (something was just sent to the workflow).
    A reader that starts again where it left off passes the previous ``resent``."""
    handle = client.get_workflow_handle(workflow_id)
    resent = resent or Resent()
    offset, delay, closed, oldest = from_offset, MIN_POLL, False, from_offset == 0
    tail_read: str | None = None
    fresh = False  # woken by ``wake``, or by the safety poll: never another reader's poll
    with shared_poll(client, workflow_id) as shared:
        watch = shared.watch()
        while True:
            version = watch.version  # before the query: a change during it is not missed
            # The run that just continued as new, while the next one waits to start.
            tail = watch.tail if watch.tail != tail_read else None
            if tail is None and watch.following and not watch.ready:
                fresh = await _wait(watch, version, wake, SAFETY_POLL)  # the new run answers soon
                continue
            since = None if fresh else version
            read = partial(_read, shared, workflow_id, offset, strict, oldest, tail or "", since)
            result = await _patiently(read, workflow_id, offset)
            oldest, tail_read, fresh = False, tail or tail_read, False
            for item in _decoded(client, result):
                if resent(item[1]):
                    continue
                yield item
            offset = max(offset, result.next_offset)
            if result.more_ready or tail:
                continue  # more to read; after a run it continued, the latest run
            if closed:
                return  # read the latest run to its end after the workflow closed
            if watch.following:
                if watch.closed:
                    closed = True  # one more poll reads what came before the close
                    continue
                fresh = await _wait(watch, version, wake, SAFETY_POLL)  # nothing new yet
                continue
            # Not following the history: poll on a timer.
            if result.items:
                delay = MIN_POLL
                continue
            status = (await _patiently(handle.describe, workflow_id, offset)).status
            if status not in RUNNING:
                closed = True
                continue
            if await _wait(None, 0, wake, delay):
                delay = MIN_POLL / 1.5  # woken: poll eagerly again
            delay = min(MAX_POLL, delay * 1.5)


async def _wait(
    watch: HistoryWatch | None, version: int, wake: asyncio.Event | None, seconds: float
) -> bool:
    """Waits for a change of ``watch`` after ``version``, or for ``wake`` (then
    cleared), at most ``seconds``; whether the next poll must be made afresh: ``wake``
    was set (something was just sent), or the watch saw nothing (the safety poll)."""
    waits = [asyncio.ensure_future(watch.wait(version, seconds))] if watch else []
    if wake is not None:
        waits.append(asyncio.ensure_future(wake.wait()))
    if not waits:
        await asyncio.sleep(seconds)
        return False
    try:
        await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
    woken = wake is not None and wake.is_set()
    if wake is not None:
        wake.clear()
    return woken or (watch is not None and watch.version <= version)


async def _patiently(call: Callable[[], Awaitable[T]], workflow_id: str, offset: int) -> T:
    """``call()``, again after each failure that may pass, for up to ``RETRY_FOR``
    seconds; then ``EventsUnavailableError``, which names where to follow on from."""

    def retried(error: Exception, delay: float) -> None:
        log.info(
            "reading %s's events from %d failed (%s); again in %.1f s",
            workflow_id,
            offset,
            error,
            delay,
        )

    try:
        return await retrying(call, until=time.monotonic() + RETRY_FOR, on_retry=retried)
    except Exception as e:
        if not passing(e):
            raise
        cause = f"{type(e).__name__}: {e}"
        raise EventsUnavailableError(workflow_id, offset, RETRY_FOR, cause) from e


async def read_events(
    client: Client, workflow_id: str, from_offset: int, *, until: int, strict: bool = True
) -> list[tuple[int, RunEvent]]:
    """The events already in the stream from ``from_offset`` up to (not including)
    ``until``: a catch-up read, by query. Always asks once, so it checks that
    ``from_offset`` can still be read (``EventsExpiredError`` if not; ``strict=False``
    skips ahead instead)."""
    resent = Resent()
    items: list[tuple[int, RunEvent]] = []
    offset, oldest = from_offset, from_offset == 0
    with shared_poll(client, workflow_id) as shared:
        while True:
            read = partial(_read, shared, workflow_id, offset, strict, oldest, "", None)
            result = await _patiently(read, workflow_id, offset)
            oldest = False
            for item in _decoded(client, result):
                if item[0] >= until:
                    return items
                if not resent(item[1]):
                    items.append(item)
            if not result.more_ready or result.next_offset >= until or result.next_offset <= offset:
                return items
            offset = result.next_offset


async def _read(
    shared: SharedPoll,
    workflow_id: str,
    offset: int,
    strict: bool,
    oldest: bool,
    run_id: str,
    version: int | None,
) -> PollResult:
    """One poll of run ``run_id`` (``""``: the latest, as a poll begun at the watch's
    ``version`` shows it) from ``offset``, with what it no longer holds read from
    the runs before it (see the module's docstring). ``oldest``: a reader's first
    read from offset 0, which starts at the oldest event held."""
    client = shared.client
    handle = client.get_workflow_handle(workflow_id, run_id=run_id or None)
    async with shared.lock:  # one query at a time per workflow from this process
        try:
            result = await (poll(handle, offset) if run_id else shared.latest(offset, version))
        except Exception:
            result = await _closed_from_history(client, workflow_id, run_id, offset)
            if result is None:
                raise
        held = held_from(result)
        if held <= offset:
            return result
        end = result.next_offset
        if result.more_ready:
            timeout = timedelta(seconds=earlier_runs.QUERY_TIMEOUT)
            end = await handle.query(OFFSET_QUERY, result_type=int, rpc_timeout=timeout)
        start = max(0, end - RETAINED) if oldest else offset
        if start >= held:
            return result
        earlier = None
        if end - start <= RETAINED:
            earlier = await earlier_events(client, workflow_id, run_id, start, held)
    if earlier is None:
        if strict and not oldest:
            raise EventsExpiredError(workflow_id, offset, held)
        return result
    items = [*earlier, *result.items]
    return PollResult(items=items, next_offset=result.next_offset, more_ready=result.more_ready)


async def _closed_from_history(
    client: Client, workflow_id: str, run_id: str, offset: int
) -> PollResult | None:
    """A closed run's events from ``offset``, read from its history when no worker
    answered for it (none polls its build, or its code cannot replay it); ``None``
    if the run is open or its history does not hold them."""
    described = await client.get_workflow_handle(workflow_id, run_id=run_id or None).describe()
    if described.status == WorkflowExecutionStatus.RUNNING or not described.run_id:
        return None
    run = await closed_run(client, workflow_id, described.run_id)
    held = held_events(run) if run is not None else None
    if held is None:
        return None
    items = [item for item in held.items if item.offset >= offset]
    return PollResult(items=items, next_offset=max(offset, held.end), more_ready=False)


def _decoded(client: Client, result: PollResult) -> Iterator[tuple[int, RunEvent]]:
    converter = client.data_converter.payload_converter
    for item in result.items:
        # RunEvent is a discriminated union, which the pydantic converter decodes
        # to the class for the event's kind (pyright wants a class here).
        event: RunEvent = converter.from_payload(
            decode_stream_payload(item.data),
            RunEvent,  # pyright: ignore[reportArgumentType]
        )
        event.offset = item.offset
        yield item.offset, event


class Resent:
    """Spots a batch of events a turn sent twice (its signal was delivered, the reply
    lost, and the batch re-sent). Keys are unique within one run only (each run counts
    its turns from 1, and a 0.1.0 session's turns stamped their events with the
    session's id, not the run's label), so they are forgotten at every ``run_started``."""

    def __init__(self) -> None:
        self._seen: set[tuple[str, int, int, int]] = set()

    def __call__(self, event: RunEvent) -> bool:
        """Whether ``event`` was seen already (and should be dropped)."""
        if event.kind == "run_started":
            self._seen.clear()
        if not event.attempt:
            return False
        key = (event.run_id, event.turn, event.attempt, event.seq)
        if key in self._seen:
            return True
        self._seen.add(key)
        return False


async def session_events(
    client: Client, session_id: str, *, from_offset: int = 0, strict: bool = True
) -> AsyncIterator[RunEvent]:
    """The session's events: its runs run in its own workflow, so their events are
    in the session's stream."""
    async for event in run_events(client, session_id, from_offset=from_offset, strict=strict):
        yield event
