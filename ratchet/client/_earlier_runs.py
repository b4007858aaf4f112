"""Reading a workflow's events from its earlier runs (client side).

A continue-as-new carries only the latest events (about 24 KB) into the new run;
the run that ended holds the rest, and a closed run still answers the stream's
poll query (a worker replays its history to answer, so it costs a replay). A
reader whose offset is older than what a run holds reads the gap from the runs
before it: back, run by run, to one that holds the offset, then forward. Each
run names the run it continued in its first history event.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import ContinueAsNewInitiator
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryRequest
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.workflow_streams import PollInput, PollResult

from ratchet.wire._names import EVENTS_TOPIC, POLL_QUERY

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
    chain: list[tuple[str, PollResult]] = []  # newest first
    current = run_id
    while not chain or held_from(chain[-1][1]) > start:
        previous = await previous_run(client, workflow_id, current)
        if previous is None:
            return None
        handle = client.get_workflow_handle(workflow_id, run_id=previous)
        chain.append((previous, await poll(handle, start)))
        current = previous
    items: list[Item] = []
    offset = start
    for previous, result in reversed(chain):
        handle = client.get_workflow_handle(workflow_id, run_id=previous)
        while True:
            if held_from(result) > offset:
                return None  # a hole between two runs: nothing holds these
            items += [item for item in result.items if offset <= item.offset < until]
            offset = max(offset, result.next_offset)
            if offset >= until:
                return items
            if not result.more_ready:
                break
            result = await poll(handle, offset)
    return None  # the runs end before ``until``
