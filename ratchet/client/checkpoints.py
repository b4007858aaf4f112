"""Fork: a new session from the checkpoint after any turn, read from history.

Temporal's event history is the checkpoint log. A session's runs are its
children ``<session id>-run-<n>``; each run's history holds, per turn, the turn's
input (the messages new to it) and its result (the messages it added and the
state keys it changed). Reading them in order rebuilds the thread and state
after any turn, for sessions that are running or closed (within the
namespace's retention). Nothing is written to the source.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from ratchet.agents.messages import Message, ToolCall
from ratchet.agents.state_context import StateChange, StateEntry
from ratchet.errors import InvalidInputError
from ratchet.wire.names import CHECKPOINT_QUERY, TURN_ACTIVITY
from ratchet.wire.options import SessionOptions
from ratchet.wire.runs import RunInput, RunResult
from ratchet.wire.sessions import CheckpointAnswer, CheckpointRequest, TurnMark
from ratchet.wire.turns import TurnInput, TurnOutput

STARTED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED
COMPLETED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
CONTINUED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
SCHEDULED = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
ACTIVITY_DONE = EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
CLOSED = {
    COMPLETED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
}


class Checkpoint(BaseModel):
    """A session's thread and state after one turn."""

    source: str
    turn: int
    """Turns counted across the whole source session, from 1 (0: before the first)."""
    agent: str
    messages: list[Message] = Field(default_factory=list)
    state: dict[str, StateEntry] = Field(default_factory=dict)
    turns_in_source: int = 0
    """How many turns the source had when it was read."""
    options: SessionOptions | None = None
    """The source session's options (``None`` for a single run)."""


async def read_checkpoint(
    client: Client,
    source: str,
    *,
    at_turn: int | None = None,
    at_message: str | None = None,
) -> Checkpoint:
    """The checkpoint of ``source`` (a session, or a single run) after turn ``at_turn``,
    or after the turn that added message ``at_message``. Neither: after its last turn."""
    _check_point(at_turn, at_message)
    reader = _HistoryReader(client)
    first = await reader.first_input(source)
    point = Checkpoint(source=source, turn=0, agent=first.agent)
    found = at_turn == 0 or _replay_run(point, await reader.chain(source), at_turn, at_message)
    if not found:
        _close_open_calls(point, None)
    if at_turn is not None and not found:
        raise InvalidInputError(
            f"{source} has {point.turns_in_source} turns; there is no turn {at_turn} to fork "
            f"at. Pick a turn from 0 to {point.turns_in_source}."
        )
    if at_message is not None and not found:
        raise InvalidInputError(
            f"No turn of {source} added or read message {at_message!r}; take ids from the "
            "session's thread."
        )
    return point


def _check_point(at_turn: int | None, at_message: str | None) -> None:
    if at_turn is not None and at_message is not None:
        raise InvalidInputError("Fork at a turn or at a message, not both.")
    if at_turn is not None and at_turn < 0:
        raise InvalidInputError(f"at_turn must be 0 or more, got {at_turn}.")


class _NoSuchWorkflow(InvalidInputError):
    pass


class _RunEvents:
    """One run's events, decoded: its input, turns and result."""

    def __init__(self) -> None:
        self.input: RunInput | None = None
        self.turns: list[tuple[TurnInput, TurnOutput]] = []
        self.result: RunResult | None = None
        self.closed = False
        """The run has ended (completed, failed, cancelled, terminated or timed out)."""


def _replay_run(
    point: Checkpoint,
    run: _RunEvents,
    at_turn: int | None,
    at_message: str | None,
) -> bool:
    """Apply a run's turns to ``point`` until the fork point; ``True`` once reached."""
    assert run.input is not None
    if run.input.options.compaction is not None and run.input.session is None:
        raise InvalidInputError(
            f"{point.source} compacts its thread, and a fork cannot rebuild a compacted "
            "thread from history yet; start a new session with its exported state instead."
        )
    if run.input.options.fast:
        raise InvalidInputError(
            f"{point.source} ran in fast mode: its turns are local activities, which a fork "
            "cannot read back yet. Fork runs started without RunOptions(fast=True)."
        )
    if run.input.session is not None:
        point.messages = list(run.input.session.thread.messages)
        point.state = dict(run.input.session.state)
    for index, (turn_input, output) in enumerate(run.turns):
        point.turn += 1
        point.turns_in_source = point.turn
        by_id = {m.id: m for m in turn_input.new_messages}
        added = [by_id[a] if isinstance(a, str) else a for a in output.added]
        point.messages.extend(added)
        point.agent = output.handoff or turn_input.agent
        _apply_state(point.state, output.state)
        if at_turn == point.turn or (
            at_message is not None and any(m.id == at_message for m in added)
        ):
            following = run.turns[index + 1][0] if index + 1 < len(run.turns) else None
            _close_open_calls(point, following)
            return True
    return False


def _close_open_calls(point: Checkpoint, following: TurnInput | None) -> None:
    """Give every tool call of the checkpoint a result, as models require: the results
    settled after the turn (approvals, durable tools) are in the next turn's input;
    calls never settled get a note saying so."""
    answered = {m.tool_call_id for m in point.messages if m.role == "tool"}
    open_calls = [call for m in point.messages for call in m.tool_calls if call.id not in answered]
    if not open_calls:
        return
    settled = {
        m.tool_call_id: m for m in (following.new_messages if following else []) if m.role == "tool"
    }
    for call in open_calls:
        point.messages.append(
            settled.get(call.id)
            or Message.tool(
                call, "Not run: the session was forked before this call was settled.", is_error=True
            ).model_copy(update={"id": f"msg_fork_{call.id}"})
        )


def _apply_state(state: dict[str, StateEntry], changes: Sequence[StateChange]) -> None:
    for change in changes:
        if change.token is not None:
            continue  # another agent's key: not part of this session's state
        if change.deleted:
            state.pop(change.key, None)
        else:
            state[change.key] = StateEntry(
                data=change.data, version=change.base_version + 1, serializer=change.serializer
            )


class _HistoryReader:
    def __init__(self, client: Client) -> None:
        self.client = client
        self._first_runs: dict[str, list[HistoryEvent]] = {}

    async def first_input(self, workflow_id: str) -> RunInput:
        started = (await self._first_run(workflow_id))[
            0
        ].workflow_execution_started_event_attributes
        kind = started.workflow_type.name
        if kind == "AgentRunWorkflow":
            return await self._decode(started.input.payloads, RunInput)
        raise InvalidInputError(f"{workflow_id} is a {kind}; fork a session or an agent run.")

    async def chain(self, workflow_id: str) -> _RunEvents:
        """Every workflow run of ``workflow_id`` (it may have continued as new), in order."""
        run = _RunEvents()
        events = await self._first_run(workflow_id)
        while True:
            await self._read(events, run)
            last = events[-1]
            if last.event_type != CONTINUED:
                run.closed = last.event_type in CLOSED
                return run
            run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
            events = await self._events(workflow_id, run_id)

    async def _first_run(self, workflow_id: str) -> list[HistoryEvent]:
        """The events of the first workflow run of ``workflow_id``, fetched once."""
        if workflow_id not in self._first_runs:
            events = await self._events(workflow_id, None)
            started = events[0].workflow_execution_started_event_attributes
            first_run = started.first_execution_run_id
            if first_run and first_run != started.original_execution_run_id:
                events = await self._events(workflow_id, first_run)
            self._first_runs[workflow_id] = events
        return self._first_runs[workflow_id]

    async def _read(self, events: list[HistoryEvent], run: _RunEvents) -> None:
        scheduled: dict[int, TurnInput] = {}
        for event in events:
            if event.event_type == STARTED and run.input is None:
                payloads = event.workflow_execution_started_event_attributes.input.payloads
                run.input = await self._decode(payloads, RunInput)
            elif event.event_type == SCHEDULED:
                attributes = event.activity_task_scheduled_event_attributes
                if attributes.activity_type.name == TURN_ACTIVITY:
                    payloads = attributes.input.payloads
                    scheduled[event.event_id] = await self._decode(payloads, TurnInput)
            elif event.event_type == ACTIVITY_DONE:
                attributes = event.activity_task_completed_event_attributes
                turn_input = scheduled.get(attributes.scheduled_event_id)
                if turn_input is not None and not _is_compaction(turn_input, run.input):
                    output = await self._decode(attributes.result.payloads, TurnOutput)
                    run.turns.append((turn_input, output))
            elif event.event_type == COMPLETED:
                payloads = event.workflow_execution_completed_event_attributes.result.payloads
                run.result = await self._decode(payloads, RunResult)

    async def _events(self, workflow_id: str, run_id: str | None) -> list[HistoryEvent]:
        handle = self.client.get_workflow_handle(workflow_id, run_id=run_id)
        try:
            return [e async for e in handle.fetch_history_events()]
        except RPCError as e:
            if e.status == RPCStatusCode.NOT_FOUND:
                raise _NoSuchWorkflow(
                    f"There is no workflow {workflow_id} (or it is past the namespace's "
                    "retention); fork a session or run by its id."
                ) from e
            raise

    async def _decode(self, payloads: Sequence[Any], kind: type) -> Any:
        (value,) = await self.client.data_converter.decode(list(payloads), [kind])
        return value


def _is_compaction(turn_input: TurnInput, run_input: RunInput | None) -> bool:
    """A summarising turn of compaction runs another agent over the thread."""
    policy = run_input.options.compaction if run_input else None
    agent = getattr(policy, "agent", None)
    return agent is not None and turn_input.agent == agent and not turn_input.new_messages


async def read_mark(
    client: Client, source: str, *, at_turn: int | None, at_message: str | None
) -> tuple[CheckpointAnswer, TurnMark]:
    """A current session's mark after turn ``at_turn`` (or after the turn that added
    ``at_message``), asked of the workflow runs that hold it, newest first."""
    _check_point(at_turn, at_message)
    request = CheckpointRequest(turn=at_turn, message=at_message)
    run_id: str | None = None
    total: int | None = None
    while True:
        handle = client.get_workflow_handle(source, run_id=run_id)
        answer = await handle.query(CHECKPOINT_QUERY, request, result_type=CheckpointAnswer)
        total = answer.turns if total is None else total
        if answer.mark is not None:
            return answer, answer.mark
        earlier = answer.earlier
        if earlier is None or earlier.workflow_id != source or earlier.run_id is None:
            break
        run_id = earlier.run_id
    if at_message is not None:
        raise InvalidInputError(
            f"No turn of {source} added message {at_message!r}; take ids from the session's thread."
        )
    raise InvalidInputError(
        f"{source} has {total} turns; there is no turn {at_turn} to fork at. "
        f"Pick a turn from 0 to {total}."
    )


def not_run(calls: Sequence[ToolCall]) -> list[Message]:
    """Results for tool calls a fork starts with unsettled: models need one per call."""
    return [
        Message.tool(
            call, "Not run: the session was forked before this call was settled.", is_error=True
        ).model_copy(update={"id": f"msg_fork_{call.id}"})
        for call in calls
    ]
