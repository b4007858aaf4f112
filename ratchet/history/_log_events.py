"""A closed workflow run's part of a session's log, read from its history.

A query to a closed run costs a worker a replay of the run's whole history (a
few seconds for a few thousand events); reading the history itself costs a
fraction of that. A session's workflow run writes, as it ends, where each of its
messages is in its history (``wire.session_data.LogIndex``): this module finds those
batches in the history and checks the result against the index. Which runs to
read, and keeping them, is ``log_segments``'.
"""

from __future__ import annotations

from dataclasses import dataclass

from temporalio.api.common.v1 import Payload, WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryRequest
from temporalio.client import Client
from temporalio.converter import DataConverter
from temporalio.service import RPCError, RPCStatusCode

from ratchet.errors import HistoryGoneError, ThreadResolutionError
from ratchet.types import Gap, Message, ThreadBase
from ratchet.wire import (
    KEY_CHARS,
    SESSION_WORKFLOW,
    TOOL_ACTIVITY,
    TURN_ACTIVITY,
    LogIndex,
    LogInfo,
    SendRequest,
    SessionInput,
    SessionStatus,
    ThreadPage,
    TurnOutput,
    batch_key,
    ids_digest,
)

from ._recorded import local_turn_output

SEND_UPDATE = "send"
STARTED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED
CONTINUED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
COMPLETED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
UPDATE_ACCEPTED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
SCHEDULED = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
ACTIVITY_COMPLETED = EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
MARKER = EventType.EVENT_TYPE_MARKER_RECORDED


@dataclass(frozen=True)
class Segment:
    """The messages one closed workflow run appended to a session's log."""

    info: LogInfo
    """The log as the run left it."""
    start: int
    """Position of ``messages[0]`` in the log."""
    messages: list[Message]
    base: ThreadBase | None
    """The run that holds the messages before ``start``."""
    gaps: tuple[Gap, ...] = ()
    """Positions of ``messages`` that are placeholders for messages gone (an anchor
    copied them so)."""

    @property
    def end(self) -> int:
        return self.start + len(self.messages)

    def page(self, start: int, end: int) -> ThreadPage:
        """Messages ``start`` to ``end``, as the run would answer the ``ratchet.thread``
        query (those before the run's own name the run that holds them)."""
        if start < self.start:
            return ThreadPage(next=start, base=self.base)
        messages = self.messages[start - self.start : end - self.start]
        before = start - 1 - self.start
        before_id = self.messages[before].id if 0 <= before < len(self.messages) else None
        if before == -1 and self.base is not None:
            before_id = self.base.last_id
        return ThreadPage(messages=messages, next=start + len(messages), before_id=before_id)


async def run_history(
    client: Client, workflow_id: str, run_id: str, *, first_only: bool = False
) -> list[HistoryEvent]:
    """The events of one workflow run's history (``first_only``: its first event),
    a page of them per call."""
    request = GetWorkflowExecutionHistoryRequest(
        namespace=client.namespace,
        execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
        maximum_page_size=1 if first_only else 0,
    )
    events: list[HistoryEvent] = []
    try:
        while True:
            response = await client.workflow_service.get_workflow_execution_history(
                request, retry=True
            )
            events += response.history.events
            if first_only or not response.next_page_token:
                return events
            request.next_page_token = response.next_page_token
    except RPCError as e:
        if e.status == RPCStatusCode.NOT_FOUND:
            raise HistoryGoneError(workflow_id, run_id, 0, 0) from e
        raise ThreadResolutionError(
            f"Could not read the history of workflow {workflow_id!r} (run {run_id}): {e}"
        ) from e


async def segment_of(events: list[HistoryEvent], converter: DataConverter) -> Segment | None:
    """A closed session run's part of the log, from its history; ``None`` if the run
    wrote no index (then the query answers)."""
    index = await _index(events[-1], converter) if events else None
    return await _assemble(index, events, converter) if index is not None else None


async def started_input(event: HistoryEvent, converter: DataConverter) -> SessionInput | None:
    """The input of a session's workflow run, from its first event."""
    attributes = event.workflow_execution_started_event_attributes
    if event.event_type != STARTED or attributes.workflow_type.name != SESSION_WORKFLOW:
        return None
    payloads = attributes.input.payloads
    try:
        (started,) = await converter.decode(payloads, [SessionInput])
    except ValueError:  # another workflow's input
        return None
    return started


async def _index(last: HistoryEvent, converter: DataConverter) -> LogIndex | None:
    """The index in a session run's close event: its continue-as-new input or its
    result (``None`` for another workflow's, or a run that ended otherwise)."""
    if last.event_type == CONTINUED:
        attributes = last.workflow_execution_continued_as_new_event_attributes
        if attributes.workflow_type.name != SESSION_WORKFLOW:
            return None
        (carried,) = await converter.decode(attributes.input.payloads, [SessionInput])
        return carried.previous_log
    if last.event_type == COMPLETED:
        payloads = last.workflow_execution_completed_event_attributes.result.payloads
        try:
            (status,) = await converter.decode(payloads, [SessionStatus])
        except ValueError:  # another workflow's result
            return None
        return status.log
    return None


async def _assemble(
    index: LogIndex, events: list[HistoryEvent], converter: DataConverter
) -> Segment | None:
    """The run's messages in log order, or ``None`` if the history does not hold
    what the index names (then the query answers)."""
    batches, base = await _batches(events, converter)
    messages = batches.resolve(index.entries)
    if messages is None or index.start + len(messages) != index.info.length:
        return None
    if ids_digest(messages) != index.digest:
        return None
    # A run that re-anchored the thread ended on another base than it started with.
    base = index.base or base
    return Segment(info=index.info, start=index.start, messages=messages, base=base)


async def _batches(
    events: list[HistoryEvent], converter: DataConverter
) -> tuple[_Batches, ThreadBase | None]:
    """The batches of messages the run's history holds, and the run that holds the
    log before it."""
    batches = _Batches()
    base: ThreadBase | None = None
    results = _Results()
    for event in events:
        kind = event.event_type
        if kind == MARKER:
            marker = event.marker_recorded_event_attributes
            output = await local_turn_output(marker, converter)  # fast mode's turns
            if output is not None:
                batches.add_output(output)
        elif kind == STARTED and (started := await started_input(event, converter)):
            if started.session is not None:
                base = started.session.thread.base
                batches.add(started.session.thread.messages)
            for queued in started.queue:
                batches.add(queued.messages)
        else:
            results.gather(event)
    await results.decode_into(batches, converter)
    return batches, base


class _Results:
    """The payloads of a run's turn outputs, tool activity results and sends,
    gathered to be decoded once per kind (and one codec call): decoding payload by
    payload costs more."""

    def __init__(self) -> None:
        self._scheduled: dict[int, str] = {}
        self._payloads: dict[type, list[Payload]] = {TurnOutput: [], Message: [], SendRequest: []}

    def gather(self, event: HistoryEvent) -> None:
        kind = event.event_type
        if kind == SCHEDULED:
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            if name in (TURN_ACTIVITY, TOOL_ACTIVITY):
                self._scheduled[event.event_id] = name
        elif kind == ACTIVITY_COMPLETED:
            completed = event.activity_task_completed_event_attributes
            name = self._scheduled.get(completed.scheduled_event_id)
            if name is not None:
                result = TurnOutput if name == TURN_ACTIVITY else Message
                self._payloads[result] += completed.result.payloads
        elif kind == UPDATE_ACCEPTED:
            request = event.workflow_execution_update_accepted_event_attributes.accepted_request
            if request.input.name == SEND_UPDATE:
                self._payloads[SendRequest] += request.input.args.payloads

    async def decode_into(self, batches: _Batches, converter: DataConverter) -> None:
        for kind, found in self._payloads.items():
            for value in await converter.decode(found, [kind] * len(found)):
                if isinstance(value, TurnOutput):
                    batches.add_output(value)
                elif isinstance(value, Message):
                    batches.add([value])
                else:
                    batches.add(value.messages)


class _Batches:
    """The batches of messages a run's history holds, by the key of their last."""

    def __init__(self) -> None:
        self._by_key: dict[str, list[Message]] = {}
        self._ambiguous: set[str] = set()

    def add(self, messages: list[Message]) -> None:
        if not messages or not messages[-1].id:
            return
        key = batch_key(messages[-1].id)
        if self._by_key.setdefault(key, messages) != messages:
            self._ambiguous.add(key)  # two batches with one key: cannot tell which

    def add_output(self, output: TurnOutput) -> None:
        self.add([m for m in output.added if isinstance(m, Message)])

    def resolve(self, entries: list[Message | str]) -> list[Message] | None:
        messages: list[Message] = []
        for entry in entries:
            if isinstance(entry, Message):
                messages.append(entry)
                continue
            for at in range(0, len(entry), KEY_CHARS):
                key = entry[at : at + KEY_CHARS]
                batch = self._by_key.get(key)
                if batch is None or key in self._ambiguous:
                    return None
                messages += batch
        return messages
