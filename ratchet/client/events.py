"""Following a run or a session live, from outside (client side).

Events are read with the workflow stream's poll *query*, which writes nothing to
the workflow's history (the stream's own subscriber polls with an Update, and
each Update's completion is written to history). A poll that finds nothing waits
a little longer each time, from ``MIN_POLL`` up to ``MAX_POLL``; offsets are
global and go on across continue-as-new, so a query without a run id always
reads the latest run. Iteration ends when the workflow has closed and its
retained events are read.

A session's plain messages run in the session workflow, so its stream holds
everything; a legacy session's runs were child workflows, and
:func:`session_events` follows each such run's own stream in between.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.contrib.workflow_streams._types import PollInput, PollResult, _decode_payload

from ratchet.agents.events import RunEvent, RunStarted
from ratchet.errors import EventsExpiredError
from ratchet.wire.names import EVENTS_TOPIC, POLL_QUERY

MIN_POLL = 0.05
MAX_POLL = 1.0
RUNNING = (WorkflowExecutionStatus.RUNNING, WorkflowExecutionStatus.CONTINUED_AS_NEW)


async def run_events(
    client: Client, workflow_id: str, *, from_offset: int = 0
) -> AsyncIterator[RunEvent]:
    """The events of one workflow (a run, or a session), in order, each once."""
    async for _, event in numbered_events(client, workflow_id, from_offset=from_offset):
        yield event


async def numbered_events(
    client: Client, workflow_id: str, *, from_offset: int = 0, strict: bool = False
) -> AsyncIterator[tuple[int, RunEvent]]:
    """``run_events`` with each event's offset in the stream (its resumable id:
    ``from_offset=offset + 1`` continues after it). With ``strict``, a
    ``from_offset`` older than what the stream still retains raises
    ``EventsExpiredError`` instead of skipping ahead to what it holds."""
    handle = client.get_workflow_handle(workflow_id)
    converter = client.data_converter.payload_converter
    seen: set[tuple[str, int, int, int]] = set()
    offset, delay, closed, first = from_offset, MIN_POLL, False, True
    while True:
        result = await handle.query(
            POLL_QUERY, PollInput(topics=[EVENTS_TOPIC], from_offset=offset), result_type=PollResult
        )
        if strict and first and result.items and result.items[0].offset > offset > 0:
            raise EventsExpiredError(workflow_id, offset, result.items[0].offset)
        first = first and not result.items
        for item in result.items:
            # RunEvent is a discriminated union, which the pydantic converter decodes
            # to the class for the event's kind (pyright wants a class here).
            event: RunEvent = converter.from_payload(
                _decode_payload(item.data),
                RunEvent,  # pyright: ignore[reportArgumentType]
            )
            if event.attempt:  # sent by a turn: a batch re-sent after a lost reply is dropped
                key = (event.run_id, event.turn, event.attempt, event.seq)
                if key in seen:
                    continue
                seen.add(key)
            yield item.offset, event
        offset = max(offset, result.next_offset)
        if result.more_ready:
            continue
        if result.items:
            delay = MIN_POLL
            continue
        if closed:
            return  # read to the end after it closed
        status = (await handle.describe()).status
        if status not in RUNNING:
            closed = True  # one more poll reads what came before the close
            continue
        await asyncio.sleep(delay)
        delay = min(MAX_POLL, delay * 1.5)


async def session_events(
    client: Client, session_id: str, *, from_offset: int = 0
) -> AsyncIterator[RunEvent]:
    """The session's events. A legacy session's runs were child workflows: their
    events are followed between that run's ``run_started`` and ``run_finished``."""
    async for event in run_events(client, session_id, from_offset=from_offset):
        yield event
        if (
            isinstance(event, RunStarted)
            and event.run_id
            and not (event.data is not None and event.data.in_session)
        ):
            async for inner in run_events(client, event.run_id):
                if inner.kind != "run_started":  # the session already said so
                    yield inner
