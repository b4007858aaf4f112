"""What a run tells the world while it works: its search attributes (for the
Temporal UI's filters) and its live event stream.

The workflow keeps its events in memory; Ratchet's watchers read them with the
stream's poll *query*, which writes nothing to history. What does cost history:
a turn's streamed events reach the workflow as signals (one per batch, only when
the model streams or the agent emits), a watcher that polls with the stream's
Update (``WorkflowStreamClient.subscribe``) writes each batch into the Update's
completion, and a continue-as-new carries the last events in its input. Search
attributes are commands, so they are batched (see ``Index``).
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from pydantic_core import to_json
from temporalio import workflow
from temporalio.api.common.v1 import Payload

with workflow.unsafe.imports_passed_through():
    from temporalio.contrib.workflow_streams import WorkflowStream, WorkflowStreamState

    from ratchet._temporal_internals import stream_end, stream_items_since
    from ratchet.types import (
        AgentStatus,
        EventBase,
        ExecutionRecord,
        Message,
        RunStarted,
        RunStartedData,
        StateChanged,
        StateChangedData,
        StateChangedEvent,
        StatusChanged,
        StatusData,
        ThreadData,
        TurnCompleted,
        TurnCompletedData,
        TurnStarted,
        excerpt,
        tool_answered,
        tool_called,
    )
    from ratchet.wire import (
        AGENT_COST_USD,
        AGENT_NAME,
        AGENT_SESSION_ID,
        AGENT_STATUS,
        AGENT_TOKENS,
        AGENT_TURNS,
        EVENTS_TOPIC,
        TEXT_BY_REFERENCE,
        EventIndex,
    )

    from ._event_index import EventIndexer
    from ._ledger import ExecutionChange
    from ._patches import LONGER_FLUSH_INTERVAL, patched

JSON_PLAIN = {"encoding": b"json/plain"}
FLUSH_TURNS = 10
FLUSH_INTERVAL = timedelta(minutes=2)
"""A run's counters go without a change of status at most this often: a run of a
minute or two upserts once, as it ends (each upsert is a billed action)."""
FLUSH_INTERVAL_BEFORE = timedelta(seconds=10)
"""The interval before ``LONGER_FLUSH_INTERVAL``: histories recorded before it
upserted at it."""
EVENTS_KEPT = 2000
"""Events a workflow keeps for late watchers; older ones are dropped at turn ends."""
WAITING = (
    AgentStatus.AWAITING_APPROVAL,
    AgentStatus.AWAITING_INPUT,
    AgentStatus.AWAITING_CLIENT,
)
TOOL_KINDS = ("tool_call", "tool_result")
INDEXED = {
    "agent": AGENT_NAME,
    "session_id": AGENT_SESSION_ID,
    "status": AGENT_STATUS,
    "turns": AGENT_TURNS,
    "tokens": AGENT_TOKENS,
    "cost_usd": AGENT_COST_USD,
}


class Index:
    """Upserts search attributes whose values changed.

    Names and counters (turns, tokens, cost) go only along with a change of status,
    or once the counters are ``FLUSH_TURNS`` turns and ``FLUSH_INTERVAL`` behind:
    a run upserts when it waits or ends, and at most every two minutes between (the
    index is read by people), not once a turn.
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        """``False``: upsert nothing (a session's runs: the session indexes its totals)."""
        self._values: dict[str, Any] = _indexed_already()
        """What the index holds: set by the client at start or carried over by
        continue-as-new, then what this run upserted."""
        self._dirty: dict[str, Any] = {}
        self._flushed_turns: int = self._values.get("turns", 0)
        self._flushed_at = workflow.now()

    def update(self, *, flush: bool = False, **values: Any) -> None:
        """``flush``: send counters now (a session at rest, whose numbers an operator
        reads), not with the next change of status."""
        for name, value in values.items():
            if self._changes(name, value):
                self._values[name] = value
                self._dirty[name] = value
        if not self._dirty or not self.enabled:
            return
        turns = self._dirty.get("turns")
        behind = turns is not None and turns - self._flushed_turns >= FLUSH_TURNS
        if not flush and "status" not in self._dirty and not (behind and self._stale()):
            return  # names and counters go with the next status change
        workflow.upsert_search_attributes(
            [INDEXED[name].value_set(value) for name, value in self._dirty.items()]
        )
        self._dirty.clear()
        self._flushed_turns = self._values.get("turns", 0)
        self._flushed_at = workflow.now()

    def _changes(self, name: str, value: Any) -> bool:
        if value is None or self._values.get(name) == value:
            return False
        if name == "cost_usd" and not value:
            return False  # no prices configured: leave the attribute unset
        # No turn or token yet: a list shows an unset counter as 0.
        return bool(value) or name in self._values

    def _stale(self) -> bool:
        """Whether the counters are ``FLUSH_INTERVAL`` behind; the patch is asked only
        where the intervals disagree, so a run shorter than ten turns or 10 s records
        no marker (a billed action)."""
        age = workflow.now() - self._flushed_at
        if age < FLUSH_INTERVAL_BEFORE:
            return False
        return age >= FLUSH_INTERVAL or not patched(LONGER_FLUSH_INTERVAL)


def _indexed_already() -> dict[str, Any]:
    keys = {key.name: name for name, key in INDEXED.items()}
    return {
        keys[pair.key.name]: pair.value
        for pair in workflow.info().typed_search_attributes
        if pair.key.name in keys
    }


class EventStream:
    """The workflow's live event stream (construct it in ``@workflow.init``)."""

    def __init__(self, stream: WorkflowStream, *, texts_by_reference: bool = False) -> None:
        self.stream = stream
        self._topic = stream.topic(EVENTS_TOPIC, type=EventBase)
        self._indexer = EventIndexer(self.end)
        self._by_reference = texts_by_reference
        """The run indexes its log, so its events index may name a message for a text."""

    def publish(self, event: EventBase, text_of: Message | None = None, limit: int = 0) -> None:
        """``text_of``: the message whose text (cut to ``limit`` as ``excerpt`` cuts,
        0: whole) is the event's, which the events index then names instead."""
        # The payload the pydantic converter would build, built directly: asking the
        # workflow for its converter costs more than the event (a turn publishes four).
        offset, data = self.end, to_json(event)
        self._topic.publish(Payload(metadata=JSON_PLAIN, data=data))
        self._indexer.published(offset, data, self._reference(event, text_of, limit))

    def _reference(
        self, event: EventBase, message: Message | None, limit: int
    ) -> tuple[str, bytes, int] | None:
        text = event.text or ""
        if not self._by_reference or message is None or len(text) <= TEXT_BY_REFERENCE:
            return None
        if text != (excerpt(message.text, limit) if limit else message.text):
            return None
        return message.id, to_json(event.model_copy(update={"text": None})), limit

    def index(self) -> EventIndex:
        """Where this run's events are in its history, as it ends (see ``event_index``)."""
        return self._indexer.index(self.end)

    def state(self) -> WorkflowStreamState:
        """What a continue-as-new carries: the latest events only."""
        self.trim()
        return self.stream.get_state()

    def carried(self, *, max_events: int, max_bytes: int) -> WorkflowStreamState:
        """What a continue-as-new carries: at most the last ``max_events`` events
        within about ``max_bytes``; offsets go on from where they were."""
        state = self.stream.get_state()
        keep, size = 0, 0
        for item in reversed(state.log):
            size += len(item.data) + 16
            if keep >= max_events or size > max_bytes:
                break
            keep += 1
        cut = len(state.log) - keep
        return WorkflowStreamState(
            log=state.log[cut:], base_offset=state.base_offset + cut, publishers=state.publishers
        )

    @property
    def end(self) -> int:
        """The offset the next event gets."""
        return stream_end(self.stream)

    def sent_tools(self, since: int, turn: int) -> set[tuple[str, str | None]]:
        """The tool events of turn ``turn`` in the stream from offset ``since`` on, as
        (kind, call id): those its turn sent itself."""
        found: set[tuple[str, str | None]] = set()
        log = stream_items_since(self.stream, since)
        for item in log:
            data = item.data.data
            if b'"tool_' not in data:
                continue  # most events are text: not parsed
            event = json.loads(data)
            if event.get("turn") == turn and event.get("kind") in TOOL_KINDS:
                found.add((event["kind"], (event.get("data") or {}).get("id")))
        return found

    def trim(self) -> None:
        end = self.end
        if end > EVENTS_KEPT:
            self.stream.truncate(end - EVENTS_KEPT)


class RunObserver:
    """Follows a run's execution (a ledger observer and state hook): its events and
    its search attributes."""

    def __init__(
        self,
        events: EventStream,
        index: Index,
        *,
        session_id: str,
        in_session: bool = False,
    ) -> None:
        self.events = events
        self.index = index
        self.session_id = session_id
        self.run_id = workflow.info().workflow_id
        """The run the events belong to (a session names each of its runs)."""
        self.in_session = in_session
        """The run is a session's, in the session's workflow (its events are all here)."""
        self.request_id: str | None = None
        """The request id of the send the session's current run runs."""
        self._turn_from = 0
        """Where the turn in progress started in the stream (its own events follow)."""
        self._settled_from: int | None = None
        """Where the results that the turn in progress takes were sent, if they were."""

    def __call__(self, change: ExecutionChange) -> None:
        agent, old, new = change.agent, change.old, change.new
        if old is None:
            self._started(agent, new)
        resumed = old is None and new.step_count > 0  # after continue-as-new: nothing new
        if not resumed and (old is None or old.status != new.status):
            waiting = change.waiting if new.status in WAITING else []
            status = StatusData(waiting=waiting) if waiting else None
            self._publish(StatusChanged(text=new.status.value, data=status), agent)
        if new.current_step_started_at and (
            old is None or old.current_step_started_at != new.current_step_started_at
        ):
            self._turn_from = self.events.end
            self._publish(TurnStarted(turn=new.step_count + 1), agent)
        if old is not None and new.step_count > old.step_count:
            self._turn_completed(change)
        self.index.update(
            agent=agent,
            status=new.status.value,
            turns=new.step_count,
            tokens=new.usage.total_tokens,
            cost_usd=round(new.usage.cost_usd, 6),
        )

    def _started(self, agent: str, execution: ExecutionRecord) -> None:
        """The execution's first change in this workflow run."""
        self.index.update(agent=agent, session_id=self.session_id)
        if execution.step_count == 0:  # a new run, not one resumed after continue-as-new
            data = RunStartedData(
                in_session=self.in_session,
                execution_id=execution.execution_id,
                request_id=self.request_id,
            )
            self._publish(RunStarted(text=agent, data=data), agent)

    def _turn_completed(self, change: ExecutionChange) -> None:
        step = change.new.step_results[-1]
        final = change.thread.messages[-1] if step.final else None
        self._tool_events(change.agent, change.thread, step.turn, set(step.message_ids))
        data = TurnCompletedData(
            tool_calls=step.tool_calls, tokens=step.usage.total_tokens, final=step.final
        )
        text = final.text if final is not None else None
        completed = TurnCompleted(turn=step.turn, text=text, data=data)
        self._publish(completed, change.agent, text_of=final)
        self.events.trim()

    def settled(self, agent: str, turn: int, results: list[Message]) -> None:
        """The results of the work a turn left (an approved tool's, say), sent as they
        are in, before the next turn (``turn``) streams its reply."""
        if self._settled_from is None:
            self._settled_from = self.events.end
        for message in results:
            if message.role == "tool":
                self._publish(tool_answered(message).model_copy(update={"turn": turn}), agent)

    def _tool_events(self, agent: str, thread: ThreadData, turn: int, ids: set[str]) -> None:
        """The turn's tool calls and results that the turn did not send as it recorded
        them (fast mode, answers it did not record, results of pending work, a batch
        lost with its worker), from its result: in history already, so they cost
        nothing more, and each is sent exactly once."""
        added = thread.messages[-len(ids) :] if ids else []
        since, settled = self._turn_from, self._settled_from
        if settled is not None:  # its results were sent before it started
            since, self._settled_from = min(since, settled), None
        sent = self.events.sent_tools(since, turn)
        for message in added:
            if message.id not in ids:
                continue
            for call in message.tool_calls:
                if ("tool_call", call.id) not in sent:
                    self._publish(tool_called(call).model_copy(update={"turn": turn}), agent)
            if message.role == "tool" and ("tool_result", message.tool_call_id) not in sent:
                self._publish(tool_answered(message).model_copy(update={"turn": turn}), agent)

    def state_changed(self, event: StateChanged) -> None:
        """A committed state change (a runner state hook)."""
        self._publish(
            StateChangedEvent(
                turn=event.turn,
                text=", ".join(sorted(event.keys)),
                data=StateChangedData(keys=event.keys, by=event.by),
            ),
            event.agent,
        )

    def _publish(self, event: EventBase, agent: str, text_of: Message | None = None) -> None:
        event.run_id, event.agent = self.run_id, agent
        self.events.publish(event, text_of)
