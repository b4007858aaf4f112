"""A closed workflow run's part of a session's log, read from its history.

A query to a closed run costs a worker a replay of the run's whole history (a
few seconds for a few thousand events); reading the history itself costs a
fraction of that. A session's workflow run writes, as it ends, where each of its
messages is in its history (``wire.sessions.LogIndex``): this module reads the
history, finds those batches, and checks the result against the index. A run
that is open, or closed without an index (a legacy session, a terminated run),
is left to the query.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.converter import DataConverter
from temporalio.service import RPCError

from ratchet.agents.messages import Message, approximate_size
from ratchet.agents.state import ThreadBase
from ratchet.errors import ThreadResolutionError
from ratchet.wire.names import SESSION_WORKFLOW, TOOL_ACTIVITY, TURN_ACTIVITY
from ratchet.wire.sessions import LogIndex, LogInfo, SendRequest, SessionInput, SessionStatus
from ratchet.wire.turns import ThreadPage, TurnOutput

from .histories import local_turn_output

SEND_UPDATE = "send"


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


class SegmentCache:
    """Closed runs' segments (a closed run never changes), least recently used
    dropped first, bounded by the messages' JSON size."""

    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self._segments: OrderedDict[tuple[str, str], tuple[Segment, int]] = OrderedDict()
        self._bytes = 0

    def get(self, workflow_id: str, run_id: str) -> Segment | None:
        found = self._segments.get((workflow_id, run_id))
        if found is None:
            return None
        self._segments.move_to_end((workflow_id, run_id))
        return found[0]

    def put(self, workflow_id: str, run_id: str, segment: Segment) -> None:
        size = sum(approximate_size(m) for m in segment.messages)
        if size > self.max_bytes or (workflow_id, run_id) in self._segments:
            return
        self._segments[(workflow_id, run_id)] = (segment, size)
        self._bytes += size
        while self._bytes > self.max_bytes:
            _, (_, dropped) = self._segments.popitem(last=False)
            self._bytes -= dropped


async def closed_segment(
    client: Client, workflow_id: str, run_id: str, cache: SegmentCache | None = None
) -> Segment | None:
    """Run ``run_id``'s part of the log, read from its history; ``None`` when the
    run is open or did not index its part (then ask it by query)."""
    if cache is not None and (found := cache.get(workflow_id, run_id)) is not None:
        return found
    handle = client.get_workflow_handle(workflow_id, run_id=run_id)
    converter = client.data_converter
    try:
        # Asking an open run for its close event would wait for it to close.
        if (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
            return None
        events = [e async for e in handle.fetch_history_events()]
    except RPCError as e:
        raise ThreadResolutionError(
            f"Could not read the history of workflow {workflow_id!r} (run {run_id}): {e}"
        ) from e
    index = await _index(events[-1], converter) if events else None
    if index is None:
        return None
    segment = await _assemble(index, events, converter)
    if segment is not None and cache is not None:
        cache.put(workflow_id, run_id, segment)
    return segment


async def _index(last: HistoryEvent, converter: DataConverter) -> LogIndex | None:
    """The index in a session run's close event: its continue-as-new input or its
    result (``None`` for another workflow's, or a run that ended otherwise)."""
    if last.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
        attributes = last.workflow_execution_continued_as_new_event_attributes
        if attributes.workflow_type.name != SESSION_WORKFLOW:
            return None
        (carried,) = await converter.decode(attributes.input.payloads, [SessionInput])
        return carried.previous_log
    if last.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
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
    batches = _Batches()
    base: ThreadBase | None = None
    scheduled: dict[int, str] = {}
    for event in events:
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            payloads = event.workflow_execution_started_event_attributes.input.payloads
            (started,) = await converter.decode(payloads, [SessionInput])
            if started.session is not None:
                base = started.session.thread.base
                batches.add(started.session.thread.messages)
            for queued in started.queue:
                batches.add(queued.messages)
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            request = event.workflow_execution_update_accepted_event_attributes.accepted_request
            if request.input.name == SEND_UPDATE:
                (send,) = await converter.decode(request.input.args.payloads, [SendRequest])
                batches.add(send.messages)
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            if name in (TURN_ACTIVITY, TOOL_ACTIVITY):
                scheduled[event.event_id] = name
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            completed = event.activity_task_completed_event_attributes
            name = scheduled.get(completed.scheduled_event_id)
            if name == TURN_ACTIVITY:
                (output,) = await converter.decode(completed.result.payloads, [TurnOutput])
                batches.add_output(output)
            elif name == TOOL_ACTIVITY:
                (message,) = await converter.decode(completed.result.payloads, [Message])
                batches.add([message])
        elif kind == EventType.EVENT_TYPE_MARKER_RECORDED:
            marker = event.marker_recorded_event_attributes
            output = await local_turn_output(marker, converter)  # fast mode's turns
            if output is not None:
                batches.add_output(output)
    messages = batches.resolve(index.entries)
    if messages is None or index.start + len(messages) != index.info.length:
        return None
    if messages and messages[-1].id != index.last_id:
        return None
    return Segment(info=index.info, start=index.start, messages=messages, base=base)


class _Batches:
    """The batches of messages a run's history holds, by the id of their last."""

    def __init__(self) -> None:
        self._by_last: dict[str, list[Message]] = {}
        self._ambiguous: set[str] = set()

    def add(self, messages: list[Message]) -> None:
        if not messages or not messages[-1].id:
            return
        key = messages[-1].id
        if self._by_last.setdefault(key, messages) != messages:
            self._ambiguous.add(key)  # two batches end with one id: cannot tell which

    def add_output(self, output: TurnOutput) -> None:
        self.add([m for m in output.added if isinstance(m, Message)])

    def resolve(self, entries: list[Message | str]) -> list[Message] | None:
        messages: list[Message] = []
        for entry in entries:
            if isinstance(entry, Message):
                messages.append(entry)
                continue
            batch = self._by_last.get(entry)
            if batch is None or entry in self._ambiguous:
                return None
            messages += batch
        return messages
