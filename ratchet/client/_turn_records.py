"""The per-turn record of a run or session, read from its Temporal history.

History records each turn activity's scheduling, its last attempt (which worker,
when, and why the attempt before failed) and its outcome; a retried turn's result
adds the earlier attempts' workers. ``read_turns`` puts that together, so users need
not read raw events. Turns run as local activities (fast mode) leave markers
instead of activity events and are not listed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field
from temporalio.api.enums.v1 import EventType
from temporalio.api.failure.v1 import Failure
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHandle

from ratchet._temporal_internals import handle_client
from ratchet.wire import THROTTLED, TURN_ACTIVITY, AttemptRecord, TurnInput, TurnOutput

TurnStatus = Literal["running", "completed", "failed", "timed_out", "cancelled"]


class TurnRecord(BaseModel):
    """One turn: what ran it, how often, how long, and how it ended."""

    turn: int
    agent: str
    status: TurnStatus
    scheduled_at: datetime
    started_at: datetime | None = None
    """When the last attempt started."""
    closed_at: datetime | None = None
    attempts: list[AttemptRecord] = Field(default_factory=list)
    """Every attempt known, in order; the last one is the one that ended the turn."""
    failure: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def duration(self) -> float | None:
        """Seconds from scheduling to the end (queueing and retries included)."""
        if self.closed_at is None:
            return None
        return (self.closed_at - self.scheduled_at).total_seconds()


_OUTCOME = {"failure", "throttled"}
_CLOSED: dict[int, TurnStatus] = {
    EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: "completed",
    EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED: "failed",
    EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: "timed_out",
    EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED: "cancelled",
}


async def read_turns(handle: WorkflowHandle[Any, Any]) -> list[TurnRecord]:
    """The turns of the workflow's latest run, in the order they were scheduled."""
    converter = handle_client(handle).data_converter
    records: dict[int, TurnRecord] = {}
    async for event in handle.fetch_history_events():
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attrs = event.activity_task_scheduled_event_attributes
            if attrs.activity_type.name != TURN_ACTIVITY:
                continue
            (input,) = await converter.decode(attrs.input.payloads, [TurnInput])
            records[event.event_id] = TurnRecord(
                turn=input.turn,
                agent=input.agent,
                status="running",
                scheduled_at=_time(event),
            )
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            attrs = event.activity_task_started_event_attributes
            record = records.get(attrs.scheduled_event_id)
            if record is None:
                continue
            record.started_at = _time(event)
            record.attempts = [
                AttemptRecord(attempt=attrs.attempt, worker=attrs.identity, started_at=_time(event))
            ]
            if attrs.attempt > 1 and attrs.HasField("last_failure"):
                record.attempts.insert(0, _before(attrs.attempt, attrs.last_failure))
        elif kind in _CLOSED:
            await _close(records, event, converter)
    return list(records.values())


async def _close(records: dict[int, TurnRecord], event: HistoryEvent, converter: Any) -> None:
    kind = event.event_type
    attrs = getattr(event, event.WhichOneof("attributes") or "")  # the closing event's attributes
    record = records.get(attrs.scheduled_event_id)
    if record is None:
        return
    record.status = _CLOSED[kind]
    record.closed_at = _time(event)
    if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
        (output,) = await converter.decode(attrs.result.payloads, [TurnOutput])
        record.input_tokens = output.usage.input_tokens
        record.output_tokens = output.usage.output_tokens
        if output.attempts:  # the workers of earlier attempts, from heartbeats
            known = {a.attempt: a for a in record.attempts[:-1]}  # the failure history kept
            earlier = [
                a.model_copy(update=known[a.attempt].model_dump(include=_OUTCOME))
                if a.attempt in known
                else a
                for a in output.attempts
            ]
            record.attempts = [*earlier, record.attempts[-1]]
    elif kind in (
        EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED,
        EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT,
    ):
        record.failure = _unwrapped(attrs.failure).message
        if record.attempts:  # the last attempt failed with the turn
            record.attempts[-1].failure = record.failure


def _unwrapped(failure: Failure) -> Failure:
    """The failure the worker reported: the server replaces one over its size limit
    (4 KB) by a server failure "Failure exceeds size limit." caused by the original."""
    if failure.HasField("server_failure_info") and failure.HasField("cause"):
        return failure.cause
    return failure


def _before(attempt: int, failure: Failure) -> AttemptRecord:
    """The attempt before ``attempt``, as its failure tells: a provider's throttling
    (``THROTTLED``, its message ``throttled (429, retry-after 2s): ...``) or a failure."""
    failure = _unwrapped(failure)
    if failure.application_failure_info.type == THROTTLED:
        said = failure.message.removeprefix("throttled (").partition("): ")[0]
        return AttemptRecord(attempt=attempt - 1, throttled=said)
    return AttemptRecord(attempt=attempt - 1, failure=failure.message)


def _time(event: HistoryEvent) -> datetime:
    return event.event_time.ToDatetime(tzinfo=UTC)
