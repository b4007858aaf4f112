"""What a turn activity takes and returns, and how a worker pages a thread in."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from ratchet.agents import CompactionPolicy, FitWindow
from ratchet.types import (
    ClientTool,
    Decision,
    Message,
    PendingAction,
    PromptSize,
    SharedEntry,
    ShareToken,
    SparseModel,
    StateChange,
    StateConflict,
    StateEntry,
    ThreadBase,
    ToolCall,
    Usage,
    View,
    whole_log,
)

from ._names import PAGE_BYTES
from ._options import InterceptorRef


class ThreadRef(SparseModel):
    """A turn's thread: a log that the turn's workflow holds (its earlier messages
    by reference, ``ThreadBase``), as it stood before the turn's new messages."""

    id: str
    length: int
    """Messages in the log before the turn's new ones."""
    last_tag: str | None = None
    """``id_tag`` of message ``length - 1``'s id: tells whether a worker's cached
    message at that position is this log's."""
    kind: str = "messages"
    """Where the conversation lives (``ThreadData.kind``)."""
    cursor: str | None = None
    """A service-backed thread's cursor: the service holds the conversation up to it."""


class ThreadPageRequest(BaseModel):
    """The ``ratchet.thread`` query's argument: messages ``start`` to ``end`` of a log."""

    thread_id: str
    start: int
    end: int
    max_bytes: int = PAGE_BYTES


class ThreadPage(SparseModel):
    messages: list[Message] = []
    next: int
    """Index of the first message not in this page (``end`` when complete)."""
    base: ThreadBase | None = None
    """Set, with no messages, when ``start`` is before the messages this workflow
    run holds: ask the run ``base`` names for those."""
    before_id: str | None = None
    """Id of message ``start - 1`` when this run knows it (checks a cached prefix)."""


class TurnInput(SparseModel):
    """What one turn needs: the agent, the log positions it is given, and its state.

    The turn's new messages are the last ``new_count`` of the log (the workflow
    appends them before the turn: they are in history already, in the run's input,
    the send that brought them or the results the workflow settled). The worker
    finds the positions it needs in its cache, in what the workflow handed over in
    the same process, or pages them in with the ``ratchet.thread`` query. Every
    message is written to history once.
    """

    agent: str
    """The registered agent that takes the turn."""
    execution_id: str
    """The run's execution (idempotency keys and question ids include it)."""
    run_id: str = ""
    """The run the turn's events name: a session's run, its label; empty: the
    workflow's own id (a single run)."""
    turn: int
    """The turn's number in its execution, from 1."""
    thread: ThreadRef
    """The log before the turn's new messages."""
    view: View = Field(default_factory=whole_log)
    """The spans of the log the turn sends, before its new messages (see
    ``ThreadData.view``)."""
    new_count: int = 0
    """How many messages at the end of the log are new to the agent."""
    new_messages: list[Message] = Field(default_factory=list)
    """The new messages themselves, only when the turn is a local activity (fast
    mode): its input is not written to history, and it cannot page them in."""
    new_last_tag: str | None = None
    """``id_tag`` of the last new message's id (checks a batch handed over in the
    same process)."""
    state: dict[str, StateEntry] = Field(default_factory=dict)
    """The agent's committed values sent inline (nothing for an agent without state)."""
    state_refs: dict[str, str] = Field(default_factory=dict)
    """The other committed keys, by the origin of their value (see ``state_refs``)."""
    session_id: str = ""
    """The agent's session, to ask the workflow for state values a worker lacks."""
    shared: list[SharedEntry] = Field(default_factory=list)
    """Other agents' keys this run holds share tokens for."""
    conflicts: list[StateConflict] = Field(default_factory=list)
    """State changes of the previous turn that were not committed."""
    events: bool = True
    """The run's workflow hosts an event stream: send the turn's events to it."""
    compaction: CompactionPolicy | None = None
    """Compact the view first when it is over this budget (``RunOptions.compaction``)."""
    fit_window: FitWindow | None = FitWindow()
    """Keep the prompt within the model's window (``RunOptions.fit_window``)."""
    prompt: PromptSize | None = None
    """The last prompt over this thread as its model counted it (the count's start)."""
    tool_interceptor: InterceptorRef | None = None
    """The run's tool interceptor (``RunOptions.tool_interceptor``)."""
    client_tools: list[ClientTool] = Field(default_factory=list[ClientTool])
    """The run's client tools (``RunOptions.client_tools``), offered to the model."""
    max_attempts: int | None = None
    """The run's attempts per turn when the turn counts them itself (Temporal's retry
    policy then has no limit): throttled attempts do not count, and the attempt that
    reaches it fails the turn (0: unlimited). ``None``: Temporal counts every attempt."""


class AttemptRecord(SparseModel):
    """One attempt of a turn: which worker ran it, from when."""

    attempt: int
    worker: str = ""
    started_at: datetime | None = None
    failure: str | None = None
    """Why it did not finish the turn (known for the attempt just before the last)."""
    throttled: str | None = None
    """Set when the model's provider throttled it (``429, retry-after 2s``): a wait,
    not a failure; it does not count against ``RunOptions.max_attempts``."""
    throttled_s: float | None = None
    """Seconds the throttle counts towards the turn's ``turn_timeout``: the attempt's
    run time plus the wait the provider asked for (1s when it named none)."""


class TurnOutput(SparseModel):
    """What a turn appended to the thread, in order.

    An entry is a new message, or the id of one of the turn's new messages (those
    are in the log and in history already, so they are not written again).
    """

    added: list[Message | str] = Field(default_factory=list)
    final_id: str | None = None
    """Id of the final response, when the turn ended the run."""
    usage: Usage = Usage()
    """What the turn spent (its compaction's summary included)."""
    cursor: str | None = None
    """A service-backed thread's new cursor (e.g. the last response id)."""
    state: list[StateChange] = Field(default_factory=list)
    """The keys the turn changed; the workflow commits them together."""
    shares: list[ShareToken] = Field(default_factory=list)
    """Share tokens the turn created."""
    write_id: str | None = None
    """Names this turn's state write; committed values carry it as their origin."""
    pending: list[PendingAction] = Field(default_factory=list)
    """Work for the workflow before the next turn (approvals, questions, durable
    tool calls, sub-agents)."""
    handoff: str | None = None
    """The agent that takes the run over from the next turn."""
    decisions: list[Decision] = Field(default_factory=list)
    """Calls the agent's own approval policy allowed or denied (``Result.decisions``):
    the workflow records them in the audit trail."""
    view: View | None = None
    """Set when the turn changed the view (it compacted it, or a service took the
    conversation up to a new cursor): the view from now on (a summary note, if any,
    is the first new message of ``added``)."""
    attempts: list[AttemptRecord] = Field(default_factory=list)
    """The attempts before this one, as far as their heartbeats reached the server
    (empty on a first attempt: history names its worker)."""
    prompt: PromptSize | None = None
    """This turn's prompt as its model counted it, for the next turn's count."""


class ToolInput(SparseModel):
    """One tool call run as its own activity (durable, or approved)."""

    agent: str
    call: ToolCall
    execution_id: str = ""
    turn: int = 0
    tool_interceptor: InterceptorRef | None = None
    """The run's tool interceptor: it may answer the call instead of the tool."""
