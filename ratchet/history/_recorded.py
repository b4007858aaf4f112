"""Reading what a workflow's history holds about its turns: when each ran, what it
added and cost, and the run's result, without asking a worker (a query on a closed
workflow costs a worker a replay of it). Used by rerun planning and evaluations."""

from __future__ import annotations

import bisect
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHandle
from temporalio.converter import DataConverter

from ratchet._temporal_internals import handle_client
from ratchet.types import Message, Usage
from ratchet.wire import TOOL_ACTIVITY, TURN_ACTIVITY, RunResult, TurnOutput

T = TypeVar("T")
LOCAL_ACTIVITY_MARKER = "core_local_activity"


@dataclass
class RecordedTurn:
    """A turn as its workflow's history holds it: when it was scheduled and done."""

    scheduled: datetime
    completed: datetime
    output: TurnOutput


async def recorded_turns(handle: WorkflowHandle, *, follow: bool = True) -> list[RecordedTurn]:
    """The completed turns in ``handle``'s history, oldest first; ``follow``: in the
    runs before it too (a session continues as new), back to its first."""
    return (await read_history(handle, follow=follow)).turns


@dataclass
class ReadHistory:
    """What ``read_history`` read: the turns, the run's result, the tool results."""

    turns: list[RecordedTurn]
    result: RunResult | None
    """The run's result, if the run completed (its last workflow run's)."""
    tool_results: list[Message] = field(default_factory=list[Message])
    """What the calls run as their own activities returned (approved or durable calls:
    the workflow, not a turn, adds those results to the thread)."""

    @property
    def added(self) -> list[Message]:
        """The messages the turns added, then the results of tool activities."""
        added = [m for turn in self.turns for m in turn.output.added if isinstance(m, Message)]
        return added + self.tool_results


async def read_history(
    handle: WorkflowHandle, *, follow: bool = True, run_result: bool = False
) -> ReadHistory:
    """The turns of ``handle`` (see ``recorded_turns``) and, ``run_result`` (an agent
    run's), its ``RunResult``, in one read."""
    converter = handle_client(handle).data_converter
    runs: list[ReadHistory] = []
    async for events in _runs(handle, handle.run_id, follow=follow):
        read, completed = await _read_run(events, converter)
        if run_result and completed is not None and not runs:
            (read.result,) = await converter.decode(completed, [RunResult])
        runs.append(read)
    runs.reverse()
    return ReadHistory(
        turns=[t for run in runs for t in run.turns],
        result=runs[-1].result,
        tool_results=[m for run in runs for m in run.tool_results],
    )


async def _runs(
    handle: WorkflowHandle, run_id: str | None, *, follow: bool
) -> AsyncIterator[list[HistoryEvent]]:
    """The history of run ``run_id`` (``None``: the latest) and, ``follow``, of each
    run it continued, newest first."""
    while True:
        run = handle_client(handle).get_workflow_handle(handle.id, run_id=run_id)
        events = [event async for event in run.fetch_history_events()]
        yield events
        started = events[0].workflow_execution_started_event_attributes if events else None
        run_id = started.continued_execution_run_id if started else None
        if not follow or not run_id:
            return


async def _read_run(
    events: list[HistoryEvent], converter: DataConverter
) -> tuple[ReadHistory, Sequence[Payload] | None]:
    """One workflow run's turns and tool results, and its result's payloads if it
    completed."""
    scheduled: dict[int, tuple[str, datetime]] = {}
    read = ReadHistory(turns=[], result=None)
    completed_with: Sequence[Payload] | None = None
    for event in events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            completed_with = event.workflow_execution_completed_event_attributes.result.payloads
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            kind = event.activity_task_scheduled_event_attributes.activity_type.name
            if kind in (TURN_ACTIVITY, TOOL_ACTIVITY):
                scheduled[event.event_id] = (kind, event.event_time.ToDatetime(UTC))
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            completed = event.activity_task_completed_event_attributes
            kind, start = scheduled.get(completed.scheduled_event_id, ("", None))
            payloads = completed.result.payloads
            if kind == TURN_ACTIVITY and start is not None:
                (output,) = await converter.decode(payloads, [TurnOutput])
                read.turns.append(RecordedTurn(start, event.event_time.ToDatetime(UTC), output))
            elif kind == TOOL_ACTIVITY:
                (message,) = await converter.decode(payloads, [Message])
                read.tool_results.append(message)
        elif event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED:
            done = event.event_time.ToDatetime(UTC)
            turn = await _local_turn(event.marker_recorded_event_attributes, done, converter)
            if turn is not None:
                read.turns.append(turn)
    return read, completed_with


async def _local_turn(marker: Any, done: datetime, converter: DataConverter) -> RecordedTurn | None:
    """A turn run as a local activity (fast mode): the SDK records it as a marker,
    when the workflow task that ran it completes (``done``)."""
    found = await _local_turn_data(marker, converter)
    if found is None:
        return None
    data, output = found
    started = _timestamp(data.get("original_schedule_time")) or done
    return RecordedTurn(min(started, done), done, output)


async def local_turn_output(marker: Any, converter: DataConverter) -> TurnOutput | None:
    """The output of a turn run as a local activity, if ``marker`` records one."""
    found = await _local_turn_data(marker, converter)
    return found[1] if found is not None else None


async def _local_turn_data(
    marker: Any, converter: DataConverter
) -> tuple[dict[str, Any], TurnOutput] | None:
    if marker.marker_name != LOCAL_ACTIVITY_MARKER or "result" not in marker.details:
        return None
    (data,) = await converter.decode(marker.details["data"].payloads, [dict])
    if data.get("activity_type") != TURN_ACTIVITY:
        return None
    (output,) = await converter.decode(marker.details["result"].payloads, [TurnOutput])
    return data, output


def _timestamp(value: Any) -> datetime | None:
    if not isinstance(value, dict):
        return None
    seconds = value.get("seconds", 0) + value.get("nanos", 0) / 1e9
    return datetime.fromtimestamp(seconds, UTC)


def usage_per_user_message(
    messages: Sequence[Message], turns: Sequence[RecordedTurn]
) -> list[tuple[Usage, float]]:
    """For each user message of a thread, in order: what the turns that answered it
    cost, and the seconds from the first one's start to the last one's end."""
    where = {m.id: i for i, m in enumerate(messages) if m.id}
    starts = [i for i, m in enumerate(messages) if m.role == "user"]
    usage = [Usage() for _ in starts]
    spans: dict[int, tuple[datetime, datetime]] = {}
    for turn in turns:
        ids = [m.id if isinstance(m, Message) else m for m in turn.output.added]
        found = [where[i] for i in ids if i in where]
        n = bisect.bisect_right(starts, max(found)) - 1 if found else -1
        if n < 0:
            continue
        usage[n] = usage[n] + turn.output.usage
        first, last = spans.get(n, (turn.scheduled, turn.completed))
        spans[n] = (min(first, turn.scheduled), max(last, turn.completed))
    latency = [0.0] * len(starts)
    for n, (first, last) in spans.items():
        latency[n] = (last - first).total_seconds()
    return list(zip(usage, latency, strict=True))


async def activity_results(handle: WorkflowHandle, activity: str, result_type: type[T]) -> list[T]:
    """The results of every completed ``activity`` in ``handle``'s history, through
    all its workflow runs (continue-as-new), oldest first."""
    converter = handle_client(handle).data_converter
    runs: list[list[T]] = []
    async for events in _runs(handle, None, follow=True):
        scheduled: set[int] = set()
        results: list[T] = []
        for event in events:
            if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                attributes = event.activity_task_scheduled_event_attributes
                if attributes.activity_type.name == activity:
                    scheduled.add(event.event_id)
            elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
                completed = event.activity_task_completed_event_attributes
                if completed.scheduled_event_id in scheduled:
                    (value,) = await converter.decode(completed.result.payloads, [result_type])
                    results.append(value)
        runs.append(results)
    return [r for run in reversed(runs) for r in run]
