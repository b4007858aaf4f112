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
Iteration ends when the workflow has closed and its retained events are read.

What a reader gets: every event from its offset on, each once, or
``EventsExpiredError`` at the first one it can no longer have, never a silent
skip; every poll checks. A workflow run holds its last 2,000 events at least
(``EVENTS_KEPT``), and a continue-as-new carries only the latest few into the
new run: a reader whose offset is older than the current run holds, and at most
``RETAINED`` (500) events behind the end, reads the gap from the runs before
(``ratchet.client._earlier_runs``); further behind it gets the error. A reader
from offset 0 starts at the oldest event held, the last 500 at least.

A session's messages run in the session workflow, so its stream holds
everything its runs do.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.contrib.workflow_streams import PollResult

from ratchet._temporal_internals import decode_stream_payload
from ratchet.agents._events import RunEvent
from ratchet.errors import EventsExpiredError
from ratchet.wire._names import OFFSET_QUERY

from ._earlier_runs import earlier_events, held_from, poll
from ._follow import HistoryWatch

MIN_POLL = 0.05
MAX_POLL = 1.0
SAFETY_POLL = 30.0
"""While the history is followed, a quiet stream is still queried this often."""
RETAINED = 500
"""Events behind the end a reader may be and still get every one, whatever
continued as new meanwhile."""
RUNNING = (WorkflowExecutionStatus.RUNNING, WorkflowExecutionStatus.CONTINUED_AS_NEW)


async def run_events(
    client: Client, workflow_id: str, *, from_offset: int = 0, strict: bool = True
) -> AsyncIterator[RunEvent]:
    """The events of one workflow (a run, or a session), in order, each once."""
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
    watch = HistoryWatch(client, workflow_id)
    resent = resent or Resent()
    offset, delay, closed = from_offset, MIN_POLL, False
    try:
        while True:
            watch.changed.clear()  # before the query: a change during it is not missed
            # The run that just continued as new, while the next one waits to start.
            tail = watch.take_tail()
            if tail is None and watch.following and not watch.ready:
                await _first(watch.changed, wake, SAFETY_POLL)  # the new run answers soon
                continue
            result = await _read(client, workflow_id, offset, strict=strict, run_id=tail or "")
            for item in _decoded(client, result):
                if resent(item[1]):
                    continue
                yield item
            offset = max(offset, result.next_offset)
            if result.more_ready:
                continue
            if closed:
                return  # read to the end after it closed
            if watch.following:
                if watch.closed:
                    closed = True  # one more poll reads what came before the close
                    continue
                await _first(watch.changed, wake, SAFETY_POLL)  # nothing new, or more on the way
                continue
            # Not following the history: poll on a timer.
            if result.items:
                delay = MIN_POLL
                continue
            status = (await handle.describe()).status
            if status not in RUNNING:
                closed = True
                continue
            if wake is None:
                await asyncio.sleep(delay)
            elif await _first(wake, None, delay):
                delay = MIN_POLL / 1.5  # woken: poll eagerly again
            delay = min(MAX_POLL, delay * 1.5)
    finally:
        watch.close()


async def _first(a: asyncio.Event, b: asyncio.Event | None, seconds: float) -> bool:
    """Waits until ``a`` or ``b`` is set, at most ``seconds``, and clears
    both; whether one was set. (A change after the wait is seen by the next query.)"""
    events = [e for e in (a, b) if e is not None]
    waits = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        done, _ = await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
    for e in events:
        e.clear()
    return bool(done)


async def read_events(
    client: Client, workflow_id: str, from_offset: int, *, until: int, strict: bool = True
) -> list[tuple[int, RunEvent]]:
    """The events already in the stream from ``from_offset`` up to (not including)
    ``until``: a catch-up read, by query. Always asks once, so it checks that
    ``from_offset`` can still be read (``EventsExpiredError`` if not; ``strict=False``
    skips ahead instead)."""
    resent = Resent()
    items: list[tuple[int, RunEvent]] = []
    offset = from_offset
    while True:
        result = await _read(client, workflow_id, offset, strict=strict)
        for item in _decoded(client, result):
            if item[0] >= until:
                return items
            if not resent(item[1]):
                items.append(item)
        if not result.more_ready or result.next_offset >= until or result.next_offset <= offset:
            return items
        offset = result.next_offset


async def _read(
    client: Client, workflow_id: str, offset: int, *, strict: bool, run_id: str = ""
) -> PollResult:
    """One poll of run ``run_id`` (``""``: the latest) from ``offset``, with what it
    no longer holds read from the runs before it (see the module's docstring)."""
    handle = client.get_workflow_handle(workflow_id, run_id=run_id or None)
    result = await poll(handle, offset)
    held = held_from(result)
    if held <= offset:
        return result
    end = result.next_offset
    if result.more_ready:
        end = await handle.query(OFFSET_QUERY, result_type=int)
    start = max(0, end - RETAINED) if offset == 0 else offset  # 0: the oldest held
    if start >= held:
        return result
    earlier = None
    if end - start <= RETAINED:
        earlier = await earlier_events(client, workflow_id, run_id, start, held)
    if earlier is None:
        if strict and offset > 0:
            raise EventsExpiredError(workflow_id, offset, held)
        return result
    items = [*earlier, *result.items]
    return PollResult(items=items, next_offset=result.next_offset, more_ready=result.more_ready)


def _decoded(client: Client, result: PollResult) -> Iterator[tuple[int, RunEvent]]:
    converter = client.data_converter.payload_converter
    for item in result.items:
        # RunEvent is a discriminated union, which the pydantic converter decodes
        # to the class for the event's kind (pyright wants a class here).
        event: RunEvent = converter.from_payload(
            decode_stream_payload(item.data),
            RunEvent,  # pyright: ignore[reportArgumentType]
        )
        yield item.offset, event


class Resent:
    """Spots a batch of events a turn sent twice (its signal was delivered, the reply
    lost, and the batch re-sent). Keys are unique within one run only (a session's
    turns stamp their events with the session's id, and each run counts its turns
    from 1), so they are forgotten at every ``run_started``."""

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
