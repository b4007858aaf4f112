"""Checkpoints: a run's or session's thread and state after any of its turns.

Every ``AgentRunWorkflow`` and ``AgentSession`` workflow run keeps a mark per turn
(``workflows.marks``): the log's length and the view after the turn, its cursor
and state, and the tool calls still open. A checkpoint asks the workflow runs
for the mark, newest first (a closed run still answers a query), then pages the
log in up to it. Nothing is written to the source.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field
from temporalio.client import Client

from ratchet.agents._messages import Message, ToolCall
from ratchet.agents._state_context import StateEntry
from ratchet.errors import InvalidInputError
from ratchet.wire._names import CHECKPOINT_QUERY
from ratchet.wire._options import SessionOptions
from ratchet.wire._session_data import CheckpointAnswer, CheckpointRequest, TurnMark


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


def _check_point(at_turn: int | None, at_message: str | None) -> None:
    if at_turn is not None and at_message is not None:
        raise InvalidInputError("Fork at a turn or at a message, not both.")
    if at_turn is not None and at_turn < 0:
        raise InvalidInputError(f"at_turn must be 0 or more, got {at_turn}.")


async def read_mark(
    client: Client, source: str, *, at_turn: int | None, at_message: str | None
) -> tuple[CheckpointAnswer, TurnMark]:
    """The mark of run or session ``source`` after turn ``at_turn`` (or after the
    turn that added ``at_message``; neither: its last), asked of the workflow runs
    that hold it, newest first."""
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
