"""The record of one agent in a workflow: its session (thread, state) and the
execution in progress, changed only here so that whoever watches a run (events,
search attributes, the UI) hears of every change."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NoReturn

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ratchet.agents._engine import AgentStateExport
    from ratchet.types import (
        AgentRecord,
        AgentSession,
        AgentStatus,
        ExecutionRecord,
        Message,
        PromptSize,
        Span,
        StateEntry,
        StepResult,
        ThreadData,
        Usage,
    )
    from ratchet.wire import RunOptions

    from ._failures import run_failure
    from ._log_index import LogIndexer
    from ._progress import ShowDetails, progress_markdown


@dataclass(frozen=True)
class ExecutionChange:
    """What an observer hears whenever the execution changes (status, turns, usage)."""

    agent: str
    old: ExecutionRecord | None
    new: ExecutionRecord
    thread: ThreadData
    """The thread after the change (a completed turn's messages are its last ones)."""
    waiting: list[str] = field(default_factory=list)
    """While the run waits for someone: what for, one line each."""


Observer = Callable[[ExecutionChange], None]


def workflow_message_id() -> str:
    return f"msg_{workflow.uuid4().hex[:16]}"


class RunLedger:
    """An agent's ``AgentRecord`` (session and execution) and the agent running now."""

    def __init__(
        self,
        agent: str,
        state: AgentRecord,
        *,
        observers: Sequence[Observer] = (),
        show: ShowDetails | None = None,
    ) -> None:
        self.agent = agent
        """The agent running now (a handoff changes it)."""
        self.state = state
        self._observers = list(observers)
        self._show = show or workflow.set_current_details
        self.index: LogIndexer | None = None
        """Records where each message appended to a session's log is in history."""
        self._waiting: list[str] = []

    @property
    def execution(self) -> ExecutionRecord:
        assert self.state.execution is not None
        return self.state.execution

    @property
    def thread(self) -> ThreadData:
        return self.state.session.thread

    @property
    def waiting(self) -> list[str]:
        """What the run waits for, one line each (empty unless it is waiting)."""
        return list(self._waiting)

    def set_execution(self, execution: ExecutionRecord) -> None:
        old, self.state.execution = self.state.execution, execution
        change = ExecutionChange(self.agent, old, execution, self.thread, self._waiting)
        for observe in self._observers:
            observe(change)

    def record_turn(
        self, turn: int, added: Sequence[Message], usage: Usage, *, final: bool
    ) -> None:
        """A completed turn: the messages it added and what it spent."""
        now = workflow.now()
        step = StepResult(
            turn=turn,
            started_at=self.execution.current_step_started_at or now,
            completed_at=now,
            message_ids=[m.id for m in added],
            tool_calls=[c.describe() for m in added for c in m.tool_calls],
            usage=usage,
            final=final,
        )
        self.set_execution(self.execution.with_step_result(step))

    def set_status(self, status: AgentStatus, *, waiting: Sequence[str] = ()) -> None:
        """The run's status; while it waits for someone, what for."""
        self._waiting = list(waiting)
        self.set_execution(self.execution.with_status(status))
        self.show(waiting=self._waiting)

    def add_usage(self, usage: Usage) -> None:
        """Count usage spent outside the run's own turns (compaction, sub-agents)."""
        total = self.execution.usage + usage
        self.set_execution(self.execution.model_copy(update={"usage": total}))

    def show(self, *, error: str | None = None, waiting: Sequence[str] = ()) -> None:
        """Show the run's progress in the UI."""
        self._show(progress_markdown(self.agent, self.execution, error=error, waiting=waiting))

    def fail(self, kind: str, message: str) -> NoReturn:
        """End the run FAILED, saying why in the UI and in the raised error."""
        self.set_execution(self.execution.with_status(AgentStatus.FAILED))
        self.show(error=message)
        raise run_failure(kind, message)

    def held(self, messages: Sequence[Message]) -> None:
        """``messages`` reached the workflow as one batch of its history (a tool
        activity's result), so a session's log index can point to them there."""
        if self.index is not None:
            self.index.held(messages)

    def append(
        self,
        messages: Sequence[Message],
        *,
        cursor: str | None = None,
        view: list[Span] | None = None,
        prompt: PromptSize | None = None,
        held: bool = False,
    ) -> None:
        """Append ``messages`` to the thread's log; a turn's new cursor, view and
        prompt size come with the messages it added. ``held``: the messages are, as
        they are, one batch of this workflow run's history (a turn's output)."""
        if held:
            self.held(messages)
        if self.index is not None:
            self.index.appended(messages)
        session = self.state.session
        update: dict = {"messages": [*session.thread.messages, *messages]}
        if cursor is not None:
            update["cursor"] = cursor
        if view is not None:
            update["view"] = view
        if prompt is not None:
            update["prompt"] = prompt
        thread = session.thread.model_copy(update=update)
        self.state.session = session.model_copy(
            update={"thread": thread, "info": session.info.touch(workflow.now())}
        )

    def reset(self) -> None:
        """Forget the last execution (a session runs one per message)."""
        self._waiting = []
        self.state.execution = None


def initial_session(
    agent: str,
    options: RunOptions,
    *,
    session: AgentSession | None,
    thread: ThreadData | Sequence[Message] | None,
    state: Mapping[str, StateEntry] | AgentStateExport | None,
) -> AgentSession:
    """The session a runner starts from: the given one (or a new one), with
    ``thread`` and ``state`` in place, every message holding an id."""
    session = session or AgentSession.new(
        agent,
        workflow.now(),
        session_id=f"session-{workflow.uuid4().hex[:12]}",
        thread_id=f"thread-{workflow.uuid4().hex[:12]}",
        thread_kind=options.thread_kind,
    )
    if thread is not None:
        if not isinstance(thread, ThreadData):
            thread = ThreadData(id=session.thread.id, messages=list(thread))
        session = session.model_copy(update={"thread": thread})
    if any(not m.id for m in session.thread.messages):
        # A turn names the log by its last message's id: every message needs one.
        messages = [
            m if m.id else m.model_copy(update={"id": workflow_message_id()})
            for m in session.thread.messages
        ]
        session = session.model_copy(
            update={"thread": session.thread.model_copy(update={"messages": messages})}
        )
    if state is not None:
        entries = (
            state.entries_to_load()
            if isinstance(state, AgentStateExport)
            else {k: e.model_copy(update={"origin": None}) for k, e in state.items()}
        )
        session = session.model_copy(update={"state": entries})
    return session
