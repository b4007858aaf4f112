"""What a session counts and shows: its totals, its status, its search attributes
and details in the Temporal UI, and how a failed run is taken back."""

from __future__ import annotations

from dataclasses import dataclass

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ratchet.types import (
        AgentSession,
        AgentStatus,
        ExecutionRecord,
        Message,
        Span,
        ThreadData,
        views,
    )
    from ratchet.wire import SessionInput, SessionStatus

    from ._observe import Index

WAITING = (
    AgentStatus.AWAITING_APPROVAL,
    AgentStatus.AWAITING_INPUT,
    AgentStatus.AWAITING_CLIENT,
)


@dataclass
class SessionTotals:
    """What the session has done so far (carried across continue-as-new)."""

    agent: str
    """The agent the next message runs (a handoff moves the session to another)."""
    runs: int = 0
    runs_this_workflow_run: int = 0
    used_tokens: int = 0
    turns: int = 0
    cost_usd: float = 0.0
    updates_this_workflow_run: int = 0
    """Updates taken (a workflow run admits 2,000)."""
    last_execution: ExecutionRecord | None = None
    """The last run this workflow run finished."""

    @classmethod
    def carried(cls, input: SessionInput) -> SessionTotals:
        return cls(
            agent=input.agent,
            runs=input.runs,
            used_tokens=input.used_tokens,
            turns=input.turns,
            cost_usd=input.cost_usd,
        )


class SessionDisplay:
    """The session's search attributes and current details."""

    def __init__(self) -> None:
        self._index = Index()
        self.run_progress = ""
        """The run in progress's own details (its turns), shown under the session's."""

    def show(self, status: SessionStatus, session_id: str, *, idle: bool) -> None:
        """Index the session's status and totals, and show them in its details.

        The index says whether the session waits for someone (``AWAITING_*``), is
        closed (``COMPLETED``) or neither (``PENDING``): a busy session does not flip
        its attribute on every message; its details say whether a run is in progress.
        """
        shown = status.run_status or ("RUNNING" if status.status == "RUNNING" else None)
        shown = shown or ("COMPLETED" if status.status == "CLOSED" else "PENDING")
        waiting = status.run_status in WAITING
        indexed = shown if waiting else "COMPLETED" if status.status == "CLOSED" else "PENDING"
        self._index.update(
            agent=status.agent,
            session_id=session_id,
            status=str(indexed),
            flush=idle,  # at rest: counters now; while busy, with the batch
            turns=status.turns,
            tokens=status.used_tokens,
            cost_usd=round(status.cost_usd, 6),
        )
        if status.current_run is not None and self.run_progress:
            # The run's own table says what it waits for.
            header = session_markdown(status.model_copy(update={"waiting_for": []}), str(shown))
            workflow.set_current_details(f"{header}\n\n{self.run_progress}")
        else:
            workflow.set_current_details(session_markdown(status, str(shown)))


def session_markdown(status: SessionStatus, shown: str) -> str:
    """The session's current details for the UI."""
    lines = [
        f"**{status.agent}** session · {shown} · {status.runs} runs · {status.turns} turns · "
        f"{status.used_tokens} tokens",
    ]
    if status.current_run:
        lines.append(f"Run in progress: `{status.current_run}`")
    if status.waiting:
        lines.append(f"{status.waiting} message(s) queued behind it")
    if status.approval_rules:
        lines.append(f"Approval rules of this session: {' · '.join(status.approval_rules)}")
    if status.waiting_for:
        lines += ["", f"**Waiting for** ({shown}):"]
        lines += [f"- {w}" for w in status.waiting_for]
    return "\n".join(lines)


def rolled_back(
    session: AgentSession, mark: int, view: list[Span], cursor: str | None, state: dict
) -> AgentSession:
    """The session as it was before a failed run: the run's messages stay in the
    log (and in history) but leave the view; state and cursor go back."""
    thread = session.thread
    update = {"cursor": cursor, "view": views.without(view, mark, thread.length)}
    return session.model_copy(update={"thread": thread.model_copy(update=update), "state": state})


def position(thread: ThreadData, message: Message | None) -> int | None:
    """Where ``message`` is in the log."""
    if message is None:
        return None
    for index in range(len(thread.messages) - 1, -1, -1):
        if thread.messages[index].id == message.id:
            return thread.offset + index
    return None
