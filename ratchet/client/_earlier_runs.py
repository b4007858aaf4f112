"""Reading a workflow's events from its earlier runs (client side).

A continue-as-new carries only the latest events (about 24 KB) into the new run;
the run that ended holds the rest. A reader whose offset is older than what a
run holds reads the gap from the runs before it: back, run by run, to one that
holds the offset, then forward. Each run names the run it continued in its first
history event. A closed run's events are read from its history (each run indexes
them there as it ends, ``wire._run_record``), so no worker of its build replays
it; only a run closed before Ratchet did that (0.1.0) is asked by query.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import ContinueAsNewInitiator
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryRequest
from temporalio.client import Client, WorkflowHandle, WorkflowQueryFailedError
from temporalio.contrib.workflow_streams import PollInput, PollResult
from temporalio.service import RPCError

from ratchet.errors import ClosedRunUnreadableError, HistoryGoneError
from ratchet.history import HeldEvents, closed_run, held_events
from ratchet.wire import EVENTS_TOPIC, POLL_QUERY

Item = Any
"""A stream item as the poll query returns it (``offset``, ``data``)."""


QUERY_TIMEOUT = 10.0
"""Seconds a poll waits for a worker to answer (one that died holds it for 30)."""


async def poll(handle: WorkflowHandle[Any, Any], offset: int) -> PollResult:
    return await handle.query(
        POLL_QUERY,
        PollInput(topics=[EVENTS_TOPIC], from_offset=offset),
        result_type=PollResult,
        rpc_timeout=timedelta(seconds=QUERY_TIMEOUT),
    )


def held_from(result: PollResult) -> int:
    """The first offset a poll's run holds from the offset asked for on."""
    return result.items[0].offset if result.items else result.next_offset


async def previous_run(client: Client, workflow_id: str, run_id: str) -> str | None:
    """The run that ``run_id`` (``""``: the latest) continued as new, if any."""
    response = await client.workflow_service.get_workflow_execution_history(
        GetWorkflowExecutionHistoryRequest(
            namespace=client.namespace,
            execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
            maximum_page_size=1,
            skip_archival=True,
        ),
        retry=True,
    )
    if not response.history.events:
        return None
    started = response.history.events[0].workflow_execution_started_event_attributes
    # A retried or cron run starts a stream of its own: only continue-as-new goes on.
    if started.initiator != ContinueAsNewInitiator.CONTINUE_AS_NEW_INITIATOR_WORKFLOW:
        return None
    return started.continued_execution_run_id or None


async def earlier_events(
    client: Client, workflow_id: str, run_id: str, start: int, until: int
) -> list[Item] | None:
    """The events from offset ``start`` up to ``until`` (where run ``run_id``'s own
    begin), read from the runs before it; ``None`` if no earlier run holds ``start``."""
    chain: list[HeldEvents] = []  # newest first
    current = run_id
    while not chain or chain[-1].start > start:
        try:
            previous = await previous_run(client, workflow_id, current)
            if previous is None:
                return None
            chain.append(await _closed_events(client, workflow_id, previous, start, until))
        except HistoryGoneError:
            return None  # deleted (retention): the reader gets EventsExpiredError
        current = previous
    items: list[Item] = []
    offset = start
    for held in reversed(chain):
        if held.start > offset:
            return None  # a hole between two runs: nothing holds these
        items += [item for item in held.items if offset <= item.offset < until]
        offset = max(offset, held.end)
        if offset >= until:
            return items
    return None  # the runs end before ``until``


async def _closed_events(
    client: Client, workflow_id: str, run_id: str, start: int, until: int
) -> HeldEvents:
    """Closed run ``run_id``'s events: from its history, or (a run that did not
    index them) by query from ``start`` on."""
    run = await closed_run(client, workflow_id, run_id)
    held = held_events(run) if run is not None else None
    if held is not None:
        return held
    try:
        return await _polled(client.get_workflow_handle(workflow_id, run_id=run_id), start, until)
    except (RPCError, WorkflowQueryFailedError) as e:
        raise ClosedRunUnreadableError(
            workflow_id,
            run_id,
            "events",
            str(e),
            "read the thread and state, then follow the events from an offset the "
            "later runs hold (events_end() gives the latest)",
        ) from e


async def _polled(handle: WorkflowHandle[Any, Any], start: int, until: int) -> HeldEvents:
    """A closed run's events from ``start`` up to ``until``, asked of it by query
    (a worker replays it to answer)."""
    result = await poll(handle, start)
    first, items = held_from(result), list(result.items)
    while result.more_ready and result.next_offset < until:
        result = await poll(handle, result.next_offset)
        items += result.items
    return HeldEvents(start=first, end=result.next_offset, items=items)
