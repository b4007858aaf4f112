"""A closed workflow run's turn marks and events, read from its history.

Each run writes, as it ends, what its history does not hold already
(``wire._run_record.RunRecord``): its turn marks and its events index. A reader
of a closed run takes both from the history, so no worker replays the run and a
run whose build is gone still answers. A run recorded before Ratchet wrote them
(0.1.0) has none: its reader asks the run by query (``None`` here).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from temporalio.api.common.v1 import Payload, WorkflowExecution
from temporalio.api.enums.v1 import EventType, HistoryEventFilterType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryRequest
from temporalio.client import Client
from temporalio.contrib.workflow_streams import PublishInput, WorkflowStreamState
from temporalio.converter import DataConverter
from temporalio.service import RPCError

from ratchet._temporal_internals import PUBLISH_SIGNAL, stream_item, wire_stream_item
from ratchet.errors import ThreadResolutionError
from ratchet.types import Message, ThreadBase, excerpt
from ratchet.wire import (
    EVENTS_TOPIC,
    RUN_WORKFLOWS,
    SESSION_WORKFLOW,
    CheckpointAnswer,
    CheckpointRequest,
    RunInput,
    RunRecord,
    SessionInput,
    SessionStatus,
    TurnMark,
    find_mark,
)

from ._log_events import Segment, run_history, segment_of

STARTED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED
CONTINUED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
INPUT_TYPES: dict[str, type[SessionInput] | type[RunInput]] = {
    SESSION_WORKFLOW: SessionInput,
    **{run_type: RunInput for run_type in RUN_WORKFLOWS},
}
COMPLETED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
SIGNALED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
JSON_PLAIN = {"encoding": b"json/plain"}


@dataclass
class ClosedRun:
    """What one closed session or agent run's history holds for readers."""

    run_id: str
    started: SessionInput | RunInput
    record: RunRecord | None
    """``None``: the run wrote none (recorded before Ratchet did, or it failed)."""
    segment: Segment | None = None
    """The run's part of the log (a session's run that indexed it)."""
    published: list[PublishInput] = field(default_factory=list)
    idle: bool = False
    """A session run that ran no message and had no events signalled (it only
    closed, or continued): its events are the ones its input carried."""
    """The run's publish signals, in history order."""

    @property
    def base(self) -> ThreadBase | None:
        """The run that holds the log before this run's part."""
        session = self.started.session
        return session.thread.base if session is not None else None


async def closed_run(
    client: Client, workflow_id: str, run_id: str, *, whole: bool = True
) -> ClosedRun | None:
    """Closed run ``run_id``'s history, read once; ``None`` for another workflow's.
    ``whole=False``: only its first and its close event (its input and record: what
    a fork at a turn needs), two short reads however long the run was."""
    if whole:
        events = await run_history(client, workflow_id, run_id)
    else:
        events = await run_history(client, workflow_id, run_id, first_only=True)
        events += await _close_event(client, workflow_id, run_id)
    return await closed_run_of(events, run_id, client.data_converter, log=whole)


async def _close_event(client: Client, workflow_id: str, run_id: str) -> list[HistoryEvent]:
    request = GetWorkflowExecutionHistoryRequest(
        namespace=client.namespace,
        execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
        history_event_filter_type=HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT,
    )
    try:
        response = await client.workflow_service.get_workflow_execution_history(request, retry=True)
    except RPCError as e:
        raise ThreadResolutionError(
            f"Could not read the close of workflow {workflow_id!r} (run {run_id}): {e}"
        ) from e
    return list(response.history.events)


async def closed_run_of(
    events: Sequence[HistoryEvent], run_id: str, converter: DataConverter, *, log: bool = True
) -> ClosedRun | None:
    """What closed run ``run_id``'s history ``events`` hold for readers; ``None``
    for another workflow's. ``log``: also its part of the log (a session's)."""
    if not events or events[0].event_type != STARTED:
        return None
    kind = events[0].workflow_execution_started_event_attributes.workflow_type.name
    input_type = INPUT_TYPES.get(kind)
    if input_type is None:
        return None
    payloads = events[0].workflow_execution_started_event_attributes.input.payloads
    (started,) = await converter.decode(payloads, [input_type])
    signals: list[Payload] = []
    for event in events:
        if event.event_type == SIGNALED:
            attributes = event.workflow_execution_signaled_event_attributes
            if attributes.signal_name == PUBLISH_SIGNAL:
                signals += attributes.input.payloads
    published = await converter.decode(signals, [PublishInput] * len(signals))
    listed = list(events)
    segment = await segment_of(listed, converter) if log and kind == SESSION_WORKFLOW else None
    record = await _record(listed[-1], input_type, converter)
    idle = not published and await _ran_nothing(listed[-1], started, converter)
    return ClosedRun(run_id, started, record, segment, published, idle)


async def _ran_nothing(
    last: HistoryEvent, started: SessionInput | RunInput, converter: DataConverter
) -> bool:
    """Whether a session run closed having run no message (``runs`` as it began)."""
    if last.event_type != COMPLETED or not isinstance(started, SessionInput):
        return False
    payloads = last.workflow_execution_completed_event_attributes.result.payloads
    (status,) = await converter.decode(payloads, [SessionStatus])
    return status.runs == started.runs


async def _record(
    last: HistoryEvent, input_type: type[SessionInput | RunInput], converter: DataConverter
) -> RunRecord | None:
    """The record in a run's close event: its continue-as-new input, or a session's
    result."""
    if last.event_type == CONTINUED:
        payloads = last.workflow_execution_continued_as_new_event_attributes.input.payloads
        (carried,) = await converter.decode(payloads, [input_type])
        return carried.previous_record
    if last.event_type == COMPLETED and input_type is SessionInput:
        payloads = last.workflow_execution_completed_event_attributes.result.payloads
        (status,) = await converter.decode(payloads, [SessionStatus])
        return status.record
    return None


async def first_turn(client: Client, workflow_id: str) -> tuple[int, ThreadBase | None] | None:
    """The turn the latest run of ``workflow_id`` started at (its first mark's), and
    the run before it, from its first history event: a reader of an earlier turn
    goes there without asking the run (which may have no worker yet)."""
    events = await run_history(client, workflow_id, "", first_only=True)
    if not events or events[0].event_type != STARTED:
        return None
    attributes = events[0].workflow_execution_started_event_attributes
    input_type = INPUT_TYPES.get(attributes.workflow_type.name)
    if input_type is None:
        return None
    (started,) = await client.data_converter.decode(attributes.input.payloads, [input_type])
    if isinstance(started, SessionInput):
        turn = started.turns
    else:
        turn = started.execution.step_count if started.execution is not None else 0
    session = started.session
    return turn, session.thread.base if session is not None else None


def checkpoint_answer(run: ClosedRun, request: CheckpointRequest) -> CheckpointAnswer | None:
    """The closed run's answer to a checkpoint request, as its query would give it;
    ``None`` when its history does not hold it (then ask the run by query)."""
    record = run.record
    if record is None or not record.marks:
        return None
    marks = record.full_marks()
    messages: list[Message] = []
    offset = 0
    if run.segment is not None:
        messages, offset = run.segment.messages, run.segment.start
    elif request.message is not None:
        return None  # the run's part of the log is not indexed: the query finds it
    mark, earlier = find_mark(
        marks,
        turn=request.turn,
        message=request.message,
        messages=messages,
        offset=offset,
        turns_from=record.turns_from,
    )
    if not earlier and _dropped(record, marks, request, mark):
        return None  # a mark the bound dropped: the run still knows it
    # A first run makes its thread itself (its input names none): the record names it.
    session = run.started.session
    thread_id, kind = record.thread_id, record.thread_kind
    if thread_id is None and run.segment is not None:
        thread_id, kind = run.segment.info.thread_id, run.segment.info.kind
    elif thread_id is None and session is not None:
        thread_id, kind = session.thread.id, session.thread.kind
    if thread_id is None:
        return None
    options = run.started.options if isinstance(run.started, SessionInput) else None
    answer = CheckpointAnswer(
        run_id=run.run_id,
        thread_id=thread_id,
        kind=kind,
        turns=marks[-1].turn,
        from_turn=record.turns_from,
        options=options,
    )
    if earlier:
        return answer.model_copy(update={"earlier": run.base})
    return answer.model_copy(update={"mark": mark})


def _dropped(
    record: RunRecord, marks: list[TurnMark], request: CheckpointRequest, mark: TurnMark | None
) -> bool:
    """Whether the answer may be a mark the record dropped (past its bound)."""
    if marks[0].turn == record.turns_from:
        return False
    if request.message is not None:
        return mark is marks[0] or mark is None
    return request.turn is not None and request.turn < marks[0].turn


@dataclass(frozen=True)
class HeldEvents:
    """The events a closed run's history holds: offsets ``start`` to ``end``."""

    start: int
    end: int
    items: list[Any]
    """Stream items as the run's poll query would answer them (``offset``, ``data``)."""


def held_events(run: ClosedRun) -> HeldEvents | None:
    """The closed run's events, rebuilt from its history; ``None`` when it wrote no
    events index or its history does not match it (then ask the run by query)."""
    index = run.record.events if run.record is not None else None
    stream = run.started.stream or WorkflowStreamState()
    if index is None and run.idle:
        # Its events are those it was carried: a session 0.1.0 closed right after a
        # continue-as-new (such a history its code cannot replay to answer a query).
        end = stream.base_offset + len(stream.log)
        items = [
            wire_stream_item(item.topic, item.data, stream.base_offset + at)
            for at, item in enumerate(stream.log)
        ]
        return HeldEvents(start=stream.base_offset, end=end, items=items)
    if index is None:
        return None
    signalled = _accepted(stream, run.published)
    items = [
        wire_stream_item(item.topic, item.data, stream.base_offset + at)
        for at, item in enumerate(stream.log)
    ]
    carried_end = stream.base_offset + len(stream.log)
    if index.start > carried_end:
        items = []  # the bound dropped the run's first events: only the rest are held
    texts = _Texts(run.segment)
    offset, cursor = index.start, index.skip
    for entry in index.entries:
        if not isinstance(entry, int):
            data = entry.encode() if isinstance(entry, str) else texts.event(entry)
            if data is None:
                return None
            payload = Payload(metadata=JSON_PLAIN, data=data)
            items.append(stream_item(EVENTS_TOPIC, payload, offset))
            offset += 1
            continue
        if cursor + entry > len(signalled):
            return None
        for topic, data in signalled[cursor : cursor + entry]:
            items.append(wire_stream_item(topic, data, offset))
            offset += 1
        cursor += entry
    if offset != index.end:
        return None
    start = items[0].offset if items else index.end
    return HeldEvents(start=start, end=index.end, items=items)


class _Texts:
    """The texts of the run's messages, for events an index keeps by reference."""

    def __init__(self, segment: Segment | None) -> None:
        self._segment = segment
        self._by_id: dict[str, str] | None = None

    def event(self, entry: list[int | str]) -> bytes | None:
        """The JSON of an event kept as ``[message_id, json without text, limit]``;
        ``None`` if the run's log (its history) does not have the message."""
        message_id, without, limit = entry
        if self._by_id is None:
            messages = self._segment.messages if self._segment is not None else []
            self._by_id = {m.id: m.text for m in messages}
        text = self._by_id.get(str(message_id))
        if text is None or not isinstance(without, str) or not isinstance(limit, int):
            return None
        event = json.loads(without)
        event["text"] = excerpt(text, limit) if limit else text
        return json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode()


def _accepted(stream: WorkflowStreamState, published: list[PublishInput]) -> list[tuple[str, str]]:
    """The items of the run's publish signals that its stream took, in order: a
    batch a publisher sent again (same sequence) was dropped, as the stream does."""
    last = {name: state.sequence for name, state in stream.publishers.items()}
    items: list[tuple[str, str]] = []
    for batch in published:
        if batch.publisher_id:
            seen = last.get(batch.publisher_id)
            if seen is not None and batch.sequence <= seen:
                continue
            last[batch.publisher_id] = batch.sequence
        items += [(entry.topic, entry.data) for entry in batch.items]
    return items
