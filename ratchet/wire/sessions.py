"""A session's input, the requests its workflow takes, and what it answers."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field
from temporalio.contrib.workflow_streams import WorkflowStreamState

from ratchet.agents.compact import CompactModel
from ratchet.agents.messages import Message, ToolCall
from ratchet.agents.state import AgentSession, AgentStatus, Span, ThreadBase
from ratchet.agents.state_context import StateEntry

from .options import SessionOptions
from .runs import RunResult


class SendRequest(BaseModel):
    messages: list[Message]


class Queued(CompactModel):
    ticket: int
    messages: list[Message]


class SendOutcome(CompactModel):
    """Where a sent message is: queued, running, or done (with its run's result)."""

    ticket: int
    state: Literal["queued", "running", "done", "failed", "unknown"]
    result: RunResult | None = None
    """The run's result without its answer's text, which is in the thread once
    (``final_at``)."""
    final_at: int | None = None
    """Position of the final response in the session's thread."""
    error: str | None = None
    error_type: str | None = None


class TurnMark(CompactModel):
    """The session after one of its turns: what a fork or checkpoint starts from."""

    turn: int
    """Counted across the whole session, from 1 (0: before its first)."""
    length: int
    """Messages in the log after the turn."""
    last_id: str | None = None
    view: list[Span] | None = None
    cursor: str | None = None
    agent: str
    state: dict[str, StateEntry] = Field(default_factory=dict)
    open_calls: list[ToolCall] = Field(default_factory=list)
    """Tool calls of the turn whose results were not in the log yet."""


class LogInfo(CompactModel):
    """Where a session's thread is: its id, length, and the agent's view of it."""

    thread_id: str
    length: int
    kind: str = "messages"
    cursor: str | None = None
    view: list[Span] | None = None


class CheckpointRequest(CompactModel):
    turn: int | None = None
    message: str | None = None
    """Id of a message: the checkpoint after the turn that added it."""


class CheckpointAnswer(CompactModel):
    """A workflow run's answer: the mark, or the earlier run to ask."""

    mark: TurnMark | None = None
    earlier: ThreadBase | None = None
    run_id: str
    """The workflow run that answered (it, and the runs its thread names, hold the log)."""
    thread_id: str
    kind: str = "messages"
    turns: int = 0
    """Turns the session has had (for error messages)."""
    options: SessionOptions | None = None


class SessionInput(BaseModel):
    agent: str
    session: AgentSession | None = None
    options: SessionOptions = Field(default_factory=SessionOptions)
    runs: int = 0
    """Runs started by earlier workflow runs of this session (continue-as-new)."""
    session_id: str | None = None
    """The session's id (its workflow id)."""
    used_tokens: int = 0
    """Tokens used by earlier workflow runs of this session."""
    turns: int = 0
    cost_usd: float = 0.0
    stream: WorkflowStreamState | None = None
    """The live events carried over a continue-as-new."""
    tickets: int = 0
    """Messages sent to earlier workflow runs (tickets go on from here)."""
    queue: list[Queued] = Field(default_factory=list)
    results: list[SendOutcome] = Field(default_factory=list)


class SessionStatus(CompactModel):
    agent: str
    status: Literal["PENDING", "RUNNING", "CLOSED"]
    runs: int
    waiting: int = 0
    """Messages queued behind the run in progress."""
    current_run: str | None = None
    """The run in progress (``<session id>-run-<n>``)."""
    used_tokens: int = 0
    token_budget: int | None = None
    run_status: AgentStatus | None = None
    """The status of the run in progress."""
    waiting_for: list[str] = Field(default_factory=list)
    """What the run in progress waits for (approvals, questions), one line each."""
    turns: int = 0
    cost_usd: float = 0.0
    approval_rules: list[str] = Field(default_factory=list)
    """The session's own approval rules, one line each (``allow pay``)."""
