"""What a turn activity takes and returns, and how a worker pages a thread in."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from ratchet.agents.compact import CompactModel
from ratchet.agents.compaction import CompactionPolicy
from ratchet.agents.fit_window import FitWindow
from ratchet.agents.messages import Message, ToolCall
from ratchet.agents.pending import PendingAction
from ratchet.agents.recording import Recording
from ratchet.agents.state import PromptSize, Span, ThreadBase, ThreadData
from ratchet.agents.state_context import (
    SharedEntry,
    ShareToken,
    StateChange,
    StateConflict,
    StateEntry,
)
from ratchet.agents.usage import Usage

from .names import PAGE_BYTES


class ThreadRef(CompactModel):
    """A version of a thread, and the workflow that can answer for it."""

    id: str
    generation: int = 0
    """Bumped when the working thread is rewritten (compaction); versions restart."""
    version: int
    """How many messages this version holds."""
    last_id: str | None = None
    """Id of message ``version - 1``; proves a cached prefix is this version's."""
    workflow_id: str | None = None
    """The workflow holding the thread; default: the one that scheduled the turn."""
    run_id: str | None = None
    base: ThreadBase | None = None
    """The first messages are held by this other workflow (a session's run)."""

    @property
    def key(self) -> str:
        return f"{self.id}#{self.generation}"

    def base_ref(self) -> ThreadRef | None:
        if self.base is None:
            return None
        other = self.base.thread_id  # a fork's or a rerun's: another thread's log
        return ThreadRef(
            id=other or self.id,
            generation=0 if other else self.generation,
            version=self.base.version,
            last_id=self.base.last_id,
            workflow_id=self.base.workflow_id,
            run_id=self.base.run_id,
        )


class ThreadPageRequest(BaseModel):
    key: str
    start: int
    end: int
    max_bytes: int = PAGE_BYTES


class ThreadPage(CompactModel):
    messages: list[Message] = []
    next: int
    """Index of the first message not in this page (``end`` when complete)."""
    base: ThreadBase | None = None
    """Set, with no messages, when ``start`` is before the messages this workflow
    run holds: ask the run ``base`` names for those."""
    before_id: str | None = None
    """Id of message ``start - 1`` when this run knows it (checks a cached prefix)."""


class TurnInput(CompactModel):
    """What a turn needs: which agent, the thread so far, and messages new to it.

    Version 1 carries the whole ``thread``. Version 2 always carries ``thread_ref``
    and, for small threads only, the ``thread`` itself as well (inline mode);
    otherwise the worker resolves the reference from its cache or the workflow.
    Version 3 is a session's log: ``thread_ref`` names the log (its length counts
    the ``new_count`` new messages at its end), ``view`` says what the agent sees
    of it, and the worker finds both in its cache or pages them in.
    """

    version: int = 1
    run_id: str = ""
    """The workflow id (idempotency keys start with it); version 2 leaves it to the worker."""
    agent: str
    execution_id: str = ""
    turn: int
    thread: ThreadData | None = None
    thread_ref: ThreadRef | None = None
    new_messages: list[Message] = Field(default_factory=list)
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
    events: bool = False
    """The run's workflow hosts an event stream: send the turn's events to it."""
    view: list[Span] | None = None
    """Version 3: the spans of the log the agent sees (before the new messages)."""
    new_count: int = 0
    """Version 3: the last ``new_count`` messages of the log are new to the agent
    (sent inline as ``new_messages`` too when the turn is a local activity)."""
    compaction: CompactionPolicy | None = None
    """Version 3: compact the view first when it is over this budget."""
    new_last_id: str | None = None
    """Version 3: id of the last new message (checks a batch handed over in-process)."""
    recording: Recording | None = None
    """A rerun: tool calls are answered from this recording (``RunOptions.recording``)."""
    fit_window: FitWindow | None = FitWindow()
    """Keep the prompt within the model's window (``RunOptions.fit_window``)."""
    prompt: PromptSize | None = None
    """The last prompt over this thread as its model counted it (the count's start)."""


class AttemptRecord(CompactModel):
    """One attempt of a turn: which worker ran it, from when."""

    attempt: int
    worker: str = ""
    started_at: datetime | None = None
    failure: str | None = None
    """Why it did not finish the turn (known for the attempt just before the last)."""


class TurnOutput(CompactModel):
    """What a turn appended to the thread, in order.

    An entry is a new message, or the id of one of the input's ``new_messages``
    (those are already in history, so they are not written again).
    """

    added: list[Message | str] = Field(default_factory=list)
    final_id: str | None = None
    usage: Usage = Usage()
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
    view: list[Span] | None = None
    """Set when the turn compacted a session's view: the view from now on (a
    summary note, if any, is the first message of ``added``)."""
    attempts: list[AttemptRecord] = Field(default_factory=list)
    """The attempts before this one, as far as their heartbeats reached the server
    (empty on a first attempt: history names its worker)."""
    prompt: PromptSize | None = None
    """This turn's prompt as its model counted it, for the next turn's count."""


class ToolInput(CompactModel):
    """One tool call run as its own activity (durable, or approved)."""

    agent: str
    call: ToolCall
    execution_id: str = ""
    turn: int = 0
    recording: Recording | None = None
    """A rerun's: an approved call the recording holds gets its recorded result."""
