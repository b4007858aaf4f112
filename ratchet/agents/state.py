"""Run state, split as session data and execution data.

``AgentSession`` lives across executions (ids, the thread, metadata, cache).
``ExecutionState`` exists only while a run is in progress; between executions it
is ``None`` and the status reads PENDING. ``AgentState`` holds both and has two
serialisations: session-only (model A, to start a fresh execution) and full
(model B, to resume one mid-way). Both round-trip exactly.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    PlainSerializer,
    model_serializer,
    model_validator,
)

from .approvals import ApprovalRules
from .compact import CompactModel
from .messages import Message, new_id
from .pending import Decision
from .state_context import ShareToken, StateEntry
from .usage import Usage


class AgentStatus(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    AWAITING_APPROVAL = "AWAITING_APPROVAL"
    AWAITING_INPUT = "AWAITING_INPUT"
    AWAITING_CLIENT = "AWAITING_CLIENT"
    """A call of a client tool waits for the result its caller runs it for."""
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    INTERRUPTED = "INTERRUPTED"
    """Stopped at a safe point because a newer message took its place (session steering)."""


class SessionInfo(BaseModel):
    id: str
    started_at: datetime
    updated_at: datetime

    @classmethod
    def new(cls, now: datetime, id: str | None = None) -> SessionInfo:
        return cls(id=id or new_id("session"), started_at=now, updated_at=now)

    def touch(self, now: datetime) -> SessionInfo:
        return self.model_copy(update={"updated_at": now})


class StepResult(CompactModel):
    """One completed turn, as the execution remembers it."""

    turn: int
    started_at: datetime
    completed_at: datetime
    message_ids: list[str] = Field(default_factory=list)
    tool_calls: list[str] = Field(default_factory=list)
    usage: Usage = Usage()
    final: bool = False


MAX_STEP_RESULTS = 1000
"""Step results an execution keeps; older ones are counted (their turns are in history)."""


class ExecutionState(CompactModel):
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
    def start(cls, execution_id: str, now: datetime) -> ExecutionState:
        return cls(execution_id=execution_id, started_at=now)

    @property
    def step_count(self) -> int:
        return self.earlier_steps + len(self.step_results)

    def mark_step_started(self, now: datetime) -> ExecutionState:
        return self.model_copy(update={"current_step_started_at": now})

    def with_step_result(self, step: StepResult) -> ExecutionState:
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

    def with_status(self, status: AgentStatus) -> ExecutionState:
        return self.model_copy(update={"status": status})


class ThreadBase(CompactModel):
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


class Span(CompactModel):
    """Messages ``start`` to ``end`` (exclusive; ``None``: to the end) of a thread's
    log, as one piece of its working view.

    Written as a string, ``"688-694"``, ``"767-"`` (to the end) or ``"694-695!"``
    (dropped tool results): a fitted view has a span per trimmed tool result, and
    every turn's input carries the view."""

    start: int
    end: int | None = None
    drop: bool = False
    """Tool results in this span are shown as a one-line note (compaction)."""

    @model_serializer(mode="plain")
    def written(self) -> str:
        """The span as it is written: ``"688-694"``, ``"767-"``, ``"694-695!"``."""
        end = "" if self.end is None else str(self.end)
        return f"{self.start}-{end}{'!' if self.drop else ''}"

    @model_validator(mode="before")
    @classmethod
    def _read(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        drop = value.endswith("!")
        start, _, end = value.removesuffix("!").partition("-")
        return {"start": int(start), "end": int(end) if end else None, "drop": drop}


class PromptSize(CompactModel):
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


def whole_log() -> list[Span]:
    """The view of a whole log."""
    return [Span(start=0)]


def _write_view(spans: list[Span]) -> str:
    """A view as one string: ``"0-1,186-,!190,!198"`` is messages 0 and 186 on,
    with the tool results at 190 and 198 dropped. A fitted view drops a tool result
    every few turns; as spans, each drop would split its range in three."""
    items: list[str] = []
    group: list[Span] = []
    for span in spans:
        if group and not _joins(group[-1], span):
            items += _group(group)
            group = []
        group.append(span)
    return ",".join(items + _group(group))


def _joins(last: Span, span: Span) -> bool:
    """``span`` goes on ``last``'s range: it starts where ``last`` ends, and one of
    the two is a drop (two kept spans side by side stay apart, as written)."""
    return last.end == span.start and (last.drop or span.drop)


def _group(group: list[Span]) -> list[str]:
    drops = [span for span in group if span.drop]
    if len(drops) in (0, len(group)) or (group[-1].end is None and group[-1].drop):
        return [span.written() for span in group]
    whole = Span(start=group[0].start, end=group[-1].end).written()
    return [
        whole,
        *(f"!{d.start}" if d.end == d.start + 1 else f"!{d.start}-{d.end}" for d in drops),
    ]


def _read_view(value: Any) -> Any:
    if not isinstance(value, str):
        return value  # a list of spans
    spans: list[Span] = []
    kept: Span | None = None
    drops: list[Span] = []
    for item in value.split(",") if value else []:
        if item.startswith("!"):
            start, _, end = item[1:].partition("-")
            drops.append(Span(start=int(start), end=int(end) if end else int(start) + 1, drop=True))
            continue
        spans += _split(kept, drops)
        kept, drops = Span.model_validate(item), []
    return spans + _split(kept, drops)


def _split(kept: Span | None, drops: list[Span]) -> list[Span]:
    """A range written whole with the drops inside it, as spans again."""
    if kept is None:
        return []
    if not drops or kept.drop:
        return [kept]
    out: list[Span] = []
    at = kept.start
    for drop in drops:
        if drop.start > at:
            out.append(Span(start=at, end=drop.start))
        out.append(drop)
        at = drop.end or at
    if kept.end is None or at < kept.end:
        out.append(Span(start=at, end=kept.end))
    return out


View = Annotated[
    list[Span], PlainSerializer(_write_view, return_type=str), BeforeValidator(_read_view)
]
"""The spans of a log that a turn sends, written as one string (``_write_view``)."""


class ThreadData(BaseModel):
    """A thread: an append-only log of every message it ever had, and the view of
    it that a turn sends (see ``ratchet.agents.views``).

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
    the next turn's count starts (``ratchet.agents.fit_window``)."""

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
        from .views import render  # views builds on this module

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
    the agent's policy (``ratchet.agents.approvals``)."""
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


class AgentState(BaseModel):
    """Session data plus the execution in progress, if any."""

    session: AgentSession
    execution: ExecutionState | None = None

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
    def from_data(cls, data: dict[str, Any]) -> AgentState:
        return cls.model_validate(data)
