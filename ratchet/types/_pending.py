"""Work a turn hands back to the engine instead of doing itself.

A turn that needs a person (an approval, an answer), a side effect that must
happen exactly once, or another agent does not wait inside its activity: it
returns a ``PendingAction`` in ``Result.pending``. The workflow waits durably,
holding no worker slot, and the results reach the agent on its next turn as new
messages (tool results, or a user message for a plain question).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from ._messages import ToolCall
from ._sparse import SparseModel

PendingKind = Literal["approval", "input", "tool", "agent", "client"]
"""``approval``: a tool call a person must approve first, then run as its own activity.
``input``: a question for the user. ``tool``: a durable tool call, run as its own
activity. ``agent``: a sub-agent, run as a child workflow. ``client``: a call of a
tool the run's caller runs (``ratchet.types.ClientTool``), whose result it sends."""


def question_id(execution_id: str, turn: int, n: int) -> str:
    """The id of the ``n``-th question (from 1) a turn asks with ``request_input``."""
    return f"input_{execution_id}_{turn}_{n}"


def question_of(call: ToolCall) -> str:
    """The question an ``ask_user`` call asks (its arguments, if they name none)."""
    try:
        question = str(call.parsed_arguments().get("question", "")).strip()
    except ValueError:
        question = ""
    return question or call.arguments


class PendingAction(SparseModel):
    """One thing a run waits for before its next turn."""

    id: str
    """The tool call's id, or the question's id (``input_...``)."""
    kind: PendingKind
    call: ToolCall | None = None
    """The tool call it resolves; ``None`` for a question asked with ``request_input``."""
    question: str | None = None
    agent: str | None = None
    """The sub-agent to run (kind ``agent``)."""
    timeout_seconds: float | None = None
    """For a tool run as an activity: start-to-close timeout of one attempt."""
    max_attempts: int | None = None
    """For a tool run as an activity: attempts before its error goes to the model."""

    def describe(self) -> str:
        if self.kind == "input":
            return f"question: {self.question}"
        assert self.call is not None
        return f"{self.kind}: {self.call.describe()}"


class Decision(SparseModel):
    """What a person said about a pending action: a verdict on a tool call, or an
    answer to a question. In the audit trail (``decisions()``) a change to the
    session's approval rules is one too, of kind ``rules``."""

    id: str
    approved: bool = True
    reason: str | None = None
    answer: str | None = None
    by: str | None = None
    """Who decided (free text for the audit trail), ``timeout``/``stop``, or ``policy``
    for a call a session rule decided."""
    at: datetime | None = None
    kind: Literal["call", "rules"] = "call"
    """``rules``: a change to the session's approval rules (``reason`` says which)."""
    always: bool = False
    """Approved with "always allow this tool in this session"."""


class PendingView(SparseModel):
    """A pending action as a host sees it (``pending()`` query)."""

    action: PendingAction
    run_id: str
    turn: int
    waiting_since: datetime
    deadline: datetime | None = None
