"""A thread's start as a run copied it into its own history (re-anchoring).

A workflow run that re-anchors a thread runs ``ratchet.anchor`` activities whose
results are the log's first messages, in chunks (``wire._anchor_data``), and then
names itself, with the copy's number, as the thread's base (``ThreadBase.anchor``).
Reading that base reads those results from the run's history, open or closed: no
older run, and no worker, is needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import timedelta

from temporalio.api.common.v1 import Payload
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client

from ratchet.errors import ThreadResolutionError
from ratchet.types import Gap, Message
from ratchet.wire import ANCHOR_ACTIVITY, AnchorChunk, LogInfo

from ._log_events import ACTIVITY_COMPLETED, SCHEDULED, Segment, run_history
from ._log_segments import SegmentCache

GAP_ID = "gap"


def gap_messages(gap: Gap) -> list[Message]:
    """Placeholders for the positions of ``gap``: the first says what is missing and
    why, the rest only that they are gone (one per position: readers index by it)."""
    count = gap.end - gap.start
    first = Message.user(
        f"[{count} earlier message(s) of this conversation, positions {gap.start}-"
        f"{gap.end - 1}, are no longer available: Temporal no longer has the history "
        "that held them (the namespace's retention passed, or it was deleted).]"
    )
    rest = Message.user("[message no longer available]")
    return [
        (first if at == gap.start else rest).model_copy(update={"id": f"{GAP_ID}-{at}"})
        for at in range(gap.start, gap.end)
    ]


async def anchor_segment(
    client: Client,
    workflow_id: str,
    run_id: str,
    thread_id: str,
    anchor: int,
    segments: SegmentCache | None = None,
) -> Segment:
    """Copy ``anchor`` of thread ``thread_id``'s start, from run ``run_id``'s history."""
    key = f"{run_id}#anchor-{anchor}"
    if segments is not None and (found := segments.get(workflow_id, key)) is not None:
        return found
    chunks = await _chunks(client, workflow_id, run_id, anchor)
    messages: list[Message] = []
    gaps: list[Gap] = []
    for chunk in sorted(chunks, key=lambda c: c.start):
        if chunk.start != len(messages):
            raise ThreadResolutionError(
                f"Workflow {workflow_id!r} (run {run_id}): copy {anchor} of thread "
                f"{thread_id!r} has no chunk from position {len(messages)}."
            )
        messages += chunk.messages
        gaps += chunk.gaps
    info = LogInfo(thread_id=thread_id, length=len(messages))
    segment = Segment(info=info, start=0, messages=messages, base=None, gaps=tuple(gaps))
    if segments is not None:
        segments.put(workflow_id, key, segment)
    return segment


def anchor_results(events: Iterable[HistoryEvent]) -> Iterator[Payload]:
    """The results of a run's completed ``ratchet.anchor`` activities (its copies'
    chunks), in history order."""
    anchoring: set[int] = set()
    for event in events:
        if event.event_type == SCHEDULED:
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            if name == ANCHOR_ACTIVITY:
                anchoring.add(event.event_id)
        elif event.event_type == ACTIVITY_COMPLETED:
            completed = event.activity_task_completed_event_attributes
            if completed.scheduled_event_id in anchoring:
                yield from completed.result.payloads


async def _chunks(client: Client, workflow_id: str, run_id: str, anchor: int) -> list[AnchorChunk]:
    payloads = list(anchor_results(await run_history(client, workflow_id, run_id)))
    decoded = await client.data_converter.decode(payloads, [AnchorChunk] * len(payloads))
    return [c for c in decoded if isinstance(c, AnchorChunk) and c.anchor == anchor]


async def namespace_retention(client: Client) -> timedelta | None:
    """How long the client's namespace keeps closed runs (``None``: for ever)."""
    described = await client.workflow_service.describe_namespace(
        DescribeNamespaceRequest(namespace=client.namespace), retry=True
    )
    retention = described.config.workflow_execution_retention_ttl.ToTimedelta()
    return retention or None
