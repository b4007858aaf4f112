"""Run state, split as session data and execution data.

``AgentSession`` lives across executions (ids, the thread, metadata, cache).
``ExecutionRecord`` exists only while a run is in progress; between executions it
is ``None`` and the status reads PENDING. ``AgentRecord`` holds both and has two
serialisations: session-only (model A, to start a fresh execution) and full
(model B, to resume one mid-way). Both round-trip exactly.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from ._approval_rules import ApprovalRules
from ._messages import Message, new_id
from ._pending import Decision
from ._spans import View, whole_log
from ._sparse import SparseModel
from ._state_values import ShareToken, StateEntry
from ._status import AgentStatus
from ._usage import Usage
from .views import render


class SessionInfo(BaseModel):
    id: str
    started_at: datetime
    updated_at: datetime

    @classmethod
    def new(cls, now: datetime, id: str | None = None) -> SessionInfo:
        return cls(id=id or new_id("session"), started_at=now, updated_at=now)

    def touch(self, now: datetime) -> SessionInfo:
        return self.model_copy(update={"updated_at": now})


class StepResult(SparseModel):
    """One completed turn, as the execution remembers it."""

    turn: int
    started_at: datetime
    """When the run scheduled the turn (``TurnRecord.scheduled_at``), not when its last
    attempt started: queueing and retries lie between it and ``completed_at``. Each
    attempt's start is in ``handle.turns()``."""
    completed_at: datetime
    message_ids: list[str] = Field(default_factory=list)
    tool_calls: list[str] = Field(default_factory=list)
    usage: Usage = Usage()
    final: bool = False


MAX_STEP_RESULTS = 1000
"""Step results an execution keeps; older ones are counted (their turns are in history)."""


class ExecutionRecord(SparseModel):
    execution_id: str
    status: AgentStatus = AgentStatus.RUNNING
    started_at: datetime
    current_step_started_at: datetime | None = None
    step_results: list[StepResult] = Field(default_factory=list[StepResult])
    """The latest ``MAX_STEP_RESULTS`` completed turns."""
    earlier_steps: int = 0
    """Completed turns no longer in ``step_results``."""
    usage: Usage = Usage()

    @classmethod
    def start(cls, execution_id: str, now: datetime) -> ExecutionRecord:
        return cls(execution_id=execution_id, started_at=now)

    @property
    def step_count(self) -> int:
        return self.earlier_steps + len(self.step_results)

    def mark_step_started(self, now: datetime) -> ExecutionRecord:
        return self.model_copy(update={"current_step_started_at": now})

    def with_step_result(self, step: StepResult) -> ExecutionRecord:
        steps = [*self.step_results, step]
        dropped = max(0, len(steps) - MAX_STEP_RESULTS)
        return self.model_copy(
            update={
                "step_results": steps[dropped:],
                "earlier_steps": self.earlier_steps + dropped,
                "usage": self.usage + step.usage,
                "current_step_started_at": None,
            }
        )

    def with_status(self, status: AgentStatus) -> ExecutionRecord:
        return self.model_copy(update={"status": status})


class ThreadBase(SparseModel):
    """The first ``version`` messages of a thread, held by another workflow run.

    A thread is never copied from one workflow run to the next: the newer run
    holds only the messages it adds, and workers read the rest from the run that
    holds them (``workflow_id``, ``run_id``), by reference. That run may have
    closed (a session's earlier run, continued as new): it still answers a query,
    and a session's closed runs are read from their history instead.
    """

    workflow_id: str
    run_id: str | None = None
    version: int
    last_id: str | None = None
    thread_id: str | None = None
    """The thread the base messages belong to, when it is not this one (a fork
    shares its source's messages up to the fork point)."""
    anchor: int | None = None
    """Set when run ``run_id`` re-anchored the thread: it copied these messages into
    its own history (its ``anchor``-th copy), so no older run is needed to read
    them (``ratchet.history._anchors``)."""


class Gap(SparseModel):
    """Log positions ``start`` to ``end`` (not included) whose messages are gone:
    the closed workflow run that held them was deleted (the namespace's retention
    passed before the thread was re-anchored, or someone deleted it)."""

    start: int
    end: int
    workflow_id: str
    run_id: str | None = None


class PromptSize(SparseModel):
    """The last prompt over a thread, as its model counted it: where the next turn's
    count starts from."""

    tokens: int
    """The prompt tokens the model reported (per model call of the turn)."""
    estimate: int
    """Ratchet's estimate of the thread messages that prompt carried."""
    window: int | None = None
    """The prompt window in force when it is not the declared one (a service's
    refusal said it is lower); ``None``: the declared one."""
    declared: int | None = None
    """The window the agent's model declared then: while it declares the same, the
    window in force stands (a window learnt from a refusal is kept)."""

    def window_for(self, declared: int | None) -> int | None:
        """The window in force for a model that declares ``declared``."""
        return (self.window or declared) if declared == self.declared else declared

    @property
    def overhead(self) -> int:
        """Tokens the estimate of the messages leaves out (never below 0)."""
        return max(0, self.tokens - self.estimate)


class ThreadData(BaseModel):
    """A thread: an append-only log of every message it ever had, and the view of
    it that a turn sends (see ``ratchet.types.views``).

    Compaction and failed sends change only the view; the log keeps every message,
    in order, written to history once. A workflow run holds the messages appended
    while it ran; the earlier ones (an earlier run of a continued workflow, a fork's
    or a rerun's source) are named by ``base``.
    """

    id: str = Field(default_factory=lambda: new_id("thread"))
    kind: str = "messages"
    """Where the conversation lives: "messages" (here) or a service, e.g. "openai.responses"."""
    cursor: str | None = None
    """A service-backed thread's id at the service (e.g. the last response id)."""
    messages: list[Message] = Field(default_factory=list[Message])
    """The log's messages this workflow run holds (all of them when ``base`` is unset)."""
    base: ThreadBase | None = None
    """Set when the thread's first messages are held by another workflow run;
    ``messages`` are then only the ones after them."""
    view: View = Field(default_factory=whole_log)
    """The log positions a turn sends, in order. On a "messages" thread that is what
    the model sees; on a service-backed thread, what the service has not seen yet
    (it holds the rest under ``cursor``). The last span is open: messages appended
    later join it."""
    prompt: PromptSize | None = None
    """The last prompt a turn sent over this thread, as the model counted it: where
    the next turn's count starts (``ratchet.agents._fit_window``)."""
    gaps: list[Gap] = Field(default_factory=list[Gap])
    """Set by readers only: the positions whose messages are gone (each such
    position holds a placeholder that says so, ``gap_note``)."""

    @property
    def offset(self) -> int:
        """Position of ``messages[0]`` in the whole thread (after its base)."""
        return self.base.version if self.base else 0

    @property
    def length(self) -> int:
        """How many messages the whole thread holds (with its base)."""
        return self.offset + len(self.messages)

    @property
    def last_id(self) -> str | None:
        """Id of the whole thread's last message (its base's when this part is empty)."""
        if self.messages:
            return self.messages[-1].id
        return self.base.last_id if self.base else None

    def continued(self, workflow_id: str, run_id: str | None) -> ThreadData:
        """This thread as a new workflow run starts with it: no messages, all of
        them named by reference to the run (``workflow_id``, ``run_id``) holding them."""
        base = ThreadBase(
            workflow_id=workflow_id, run_id=run_id, version=self.length, last_id=self.last_id
        )
        return self.model_copy(update={"messages": [], "base": base})

    def visible(self) -> list[Message]:
        """The messages the view shows, of a whole log (as ``SessionHandle.thread()``
        returns it)."""
        return render(self.view, self.length, lambda p: self.messages[p - self.offset])[0]


DECISIONS_KEPT = 200
"""Decisions a session keeps in its data for the audit trail (history has them all)."""


class AgentSession(BaseModel):
    """Session data: everything kept from one execution to the next."""

    agent_id: str
    parent_agent_id: str | None = None
    thread: ThreadData = Field(default_factory=ThreadData)
    metadata: dict[str, Any] = Field(default_factory=dict)
    cache: dict[str, Any] = Field(default_factory=dict)
    info: SessionInfo
    state: dict[str, StateEntry] = Field(default_factory=dict)
    """The agent's committed keyed state (``context.state``), by key."""
    shares: dict[str, ShareToken] = Field(default_factory=dict)
    """Share tokens granted on this agent's keys, by token id."""
    approvals: ApprovalRules = Field(default_factory=ApprovalRules)
    """The session's own approval rules ("always allow search here"), read before
    the agent's policy (``ratchet.agents.ApprovalPolicy``)."""
    decisions: list[Decision] = Field(default_factory=list[Decision])
    """The latest decisions on its calls and questions, oldest first (the audit
    trail; at most ``DECISIONS_KEPT``)."""

    @classmethod
    def new(
        cls,
        agent_id: str,
        now: datetime,
        *,
        session_id: str | None = None,
        thread_id: str | None = None,
        thread_kind: str = "messages",
    ) -> AgentSession:
        """A fresh session. Workflow code passes both ids (it must not draw random ones)."""
        thread = (
            ThreadData(id=thread_id, kind=thread_kind)
            if thread_id
            else ThreadData(kind=thread_kind)
        )
        return cls(agent_id=agent_id, thread=thread, info=SessionInfo.new(now, session_id))


class AgentRecord(BaseModel):
    """Session data plus the execution in progress, if any."""

    session: AgentSession
    execution: ExecutionRecord | None = None

    @property
    def status(self) -> AgentStatus:
        return self.execution.status if self.execution else AgentStatus.PENDING

    def to_session_data(self) -> dict[str, Any]:
        """Model A: session only. Loading it starts a fresh execution."""
        return self.model_dump(mode="json", exclude={"execution"})

    def to_full_data(self) -> dict[str, Any]:
        """Model B: session and execution, to resume a run mid-way."""
        return self.model_dump(mode="json")

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> AgentRecord:
        return cls.model_validate(data)


AgentState = AgentRecord
"""0.1.0's name (``ratchet.types`` warns on it): state pickled then names this module's."""
ExecutionState = ExecutionRecord
