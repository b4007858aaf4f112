"""Checkpoints: a run's or session's thread and state after any of its turns.

Every ``AgentRun`` and ``AgentSession`` workflow run keeps a mark per turn
(``workflows.marks``): the log's length and the view after the turn, its cursor
and state, and the tool calls still open. A checkpoint asks the workflow runs
for the mark, newest first, then pages the log in up to it: an open run by
query, a closed one from its history (each run writes its marks there as it
ends, ``wire._run_record``), so no worker of its build is needed. Only a run
closed before Ratchet did that (0.1.0) is asked by query. Nothing is written to
the source.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field
from temporalio.client import Client, WorkflowQueryFailedError
from temporalio.service import RPCError

from ratchet.errors import (
    CheckpointGoneError,
    ClosedRunUnreadableError,
    HistoryGoneError,
    InvalidInputError,
)
from ratchet.history import checkpoint_answer, closed_run, first_turn
from ratchet.types import Gap, Message, StateEntry, ToolCall
from ratchet.wire import (
    CHECKPOINT_QUERY,
    CheckpointAnswer,
    CheckpointRequest,
    SessionOptions,
    TurnMark,
)


class Checkpoint(BaseModel):
    """A run's or session's thread and state after one turn."""

    source: str
    turn: int
    """Turns counted across the whole source, from 1 (0: before the first)."""
    agent: str
    messages: list[Message] = Field(default_factory=list)
    state: dict[str, StateEntry] = Field(default_factory=dict)
    turns_in_source: int = 0
    """How many turns the source had when it was read."""
    options: SessionOptions | None = None
    """The source session's options (``None`` for a single run)."""
    gaps: list[Gap] = Field(default_factory=list[Gap])
    """Positions whose messages are gone (their run deleted): placeholders in ``messages``."""


def _check_point(at_turn: int | None, at_message: str | None) -> None:
    if at_turn is not None and at_message is not None:
        raise InvalidInputError("Fork at a turn or at a message, not both.")
    if at_turn is not None and at_turn < 0:
        raise InvalidInputError(f"at_turn must be 0 or more, got {at_turn}.")


async def read_mark(
    client: Client,
    source: str,
    *,
    at_turn: int | None,
    at_message: str | None,
    closed_run_id: str | None = None,
) -> tuple[CheckpointAnswer, TurnMark]:
    """The mark of run or session ``source`` after turn ``at_turn`` (or after the
    turn that added ``at_message``; neither: its last), from the workflow runs that
    hold it, newest first. ``closed_run_id``: the latest run, when it has closed."""
    _check_point(at_turn, at_message)
    request = CheckpointRequest(turn=at_turn, message=at_message)
    run_id, closed = closed_run_id, closed_run_id is not None
    total: int | None = None
    newer_from: int | None = None
    if not closed and at_turn is not None:
        # An earlier turn than the open run's first is read from the closed runs
        # alone (the open run's build may have no worker yet, or be busy).
        found = await first_turn(client, source)
        if found is not None and at_turn < found[0]:
            turn, base = found
            if base is not None and base.workflow_id == source and base.run_id:
                run_id, closed, newer_from = base.run_id, True, turn
    while True:
        answer = await _answer(client, source, run_id, request, closed=closed, after=newer_from)
        total = answer.turns if total is None else total
        if answer.mark is not None:
            return answer, answer.mark
        earlier = answer.earlier
        if earlier is None or earlier.workflow_id != source or earlier.run_id is None:
            break
        run_id, closed, newer_from = earlier.run_id, True, answer.from_turn
    if at_message is not None:
        raise InvalidInputError(
            f"No turn of {source} added message {at_message!r}; take ids from the session's thread."
        )
    raise InvalidInputError(
        f"{source} has {total} turns; there is no turn {at_turn} to fork at. "
        f"Pick a turn from 0 to {total}."
    )


async def _answer(
    client: Client,
    source: str,
    run_id: str | None,
    request: CheckpointRequest,
    *,
    closed: bool,
    after: int | None,
) -> CheckpointAnswer:
    """One workflow run's answer: a closed run's from its history when it holds
    it, else the run's own by query."""
    if closed and run_id is not None:
        # A turn's mark is in the run's input and close events; a message's needs
        # the run's log too (its whole history).
        try:
            run = await closed_run(client, source, run_id, whole=request.message is not None)
        except HistoryGoneError as e:
            raise CheckpointGoneError(source, request.turn, run_id, after) from e
        answer = checkpoint_answer(run, request) if run is not None else None
        if answer is not None:
            return answer
    handle = client.get_workflow_handle(source, run_id=run_id)
    try:
        return await handle.query(CHECKPOINT_QUERY, request, result_type=CheckpointAnswer)
    except (RPCError, WorkflowQueryFailedError) as e:
        if not closed or run_id is None:
            raise
        instead = "fork at the latest turn"
        if after is not None:
            instead = f"fork at turn {after} or later (the later runs hold those)"
        raise ClosedRunUnreadableError(source, run_id, "turn marks", str(e), instead) from e


def not_run(calls: Sequence[ToolCall]) -> list[Message]:
    """Results for tool calls a fork starts with unsettled: models need one per call."""
    return [
        Message.tool(
            call, "Not run: the session was forked before this call was settled.", is_error=True
        ).model_copy(update={"id": f"msg_fork_{call.id}"})
        for call in calls
    ]
