"""What a run's handle and a session's handle share: the work a run waits for, the
decisions on it, the approval rules and the committed state.

Both workflows have the same handlers for these (``AgentHandlers`` and the agent
state query), so one implementation calls them, by typed reference. ``RunHandle``
and ``SessionHandle`` add what only they have.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError
from temporalio.service import RPCError, RPCStatusCode

from ratchet.agents._engine import StateExport
from ratchet.errors import DecisionError, InvalidInputError, RunFailedError
from ratchet.types import AgentRecord, ApprovalRules, Decision, PendingView, rule_change
from ratchet.wire import STATE_QUERY, DecisionRequest, DecisionVerdict, ToolResultRequest
from ratchet.workflows import AgentHandlers

from ._error_mapping import GuardedHandle, Noun, failed_run, translated
from ._listing import WorkflowSummary, summary
from ._turn_records import TurnRecord, read_turns

Refused = type[InvalidInputError] | type[DecisionError] | None
"""What an Update's own failure raises, with the cause as its message (``None``:
the ``RunFailedError``)."""


def as_refused(failure: RunFailedError, refused: Refused) -> Exception:
    return failure if refused is None else refused(failure.cause)


UPDATES: dict[DecisionVerdict, Callable[..., Any]] = {
    "approve": AgentHandlers.approve,
    "reject": AgentHandlers.reject,
    "answer": AgentHandlers.provide_input,
}


class AgentHandle:
    """The operations a run and a session share."""

    noun: ClassVar[Noun]
    _handle: GuardedHandle

    @property
    def id(self) -> str:
        return self._handle.id

    @property
    def workflow(self) -> WorkflowHandle[Any, Any]:
        """The Temporal handle, for anything this class does not wrap."""
        return self._handle.unguarded

    async def _update(self, update: Callable[..., Any], arg: Any, refused: Refused = None) -> Any:
        """Run one of the workflow's Updates. Its own failure (a validator's refusal
        says what was wrong) raises ``refused`` with the cause; a busy or closed
        workflow raises what ``translated`` says (``SessionBusyError``, ...)."""
        try:
            return await self._handle.execute_update(update, arg)
        except WorkflowUpdateFailedError as e:
            raise as_refused(failed_run(self.id, e), refused) from e

    async def describe(self) -> WorkflowSummary:
        """The run or session as ``AgentClient.list_sessions`` shows it (agent, status,
        counts, whether it is open), read from the server: no worker needed."""
        return summary(await self._handle.describe())

    async def turns(self) -> list[TurnRecord]:
        """Each turn of the current workflow run: its attempts (which worker ran each,
        when, why one failed), timings, outcome and tokens, read from its history. A
        session keeps the turns of each run before a continue-as-new in that run's."""
        with translated(self.noun, self.id):
            return await read_turns(self._handle.unguarded)

    async def record(self) -> AgentRecord:
        """Session and execution data as the workflow holds them now (between a
        session's runs the execution is ``None``: status PENDING). The thread holds
        only the latest workflow run's messages; ``thread()`` reads them all."""
        return await self._handle.query(AgentHandlers.current_state)

    async def state(self) -> AgentRecord:
        """``record()``, by its 0.1.0 name (until 0.3): "state" is now only the agents'
        key-value state (``agent_state()``)."""
        warnings.warn(
            "handle.state() is handle.record() since 0.2 (the old name works until 0.3).",
            DeprecationWarning,
            stacklevel=2,
        )
        return await self.record()

    async def agent_state(self) -> StateExport:
        """The committed state of every agent (works after a run ended, too).
        ``agent_state().get("cart", Cart, agent="shop")`` decodes one value."""
        return await self._handle.query(STATE_QUERY, result_type=StateExport)

    async def export_state(self) -> dict[str, Any]:
        """The committed state as JSON-ready data, to keep or to load into a new run
        or session (``AgentClient.start_run(..., state=...)``)."""
        return (await self.agent_state()).model_dump(mode="json")

    async def pending(self) -> list[PendingView]:
        """What the run in progress waits for: approvals, questions, client tool calls."""
        return await self._handle.query(AgentHandlers.pending)

    async def decisions(self) -> list[Decision]:
        """The audit trail of the run (a session's: of its run in progress or last
        one) and the changes to the approval rules, by time."""
        return await self._handle.query(AgentHandlers.decisions)

    async def approval_rules(self) -> ApprovalRules:
        return await self._handle.query(AgentHandlers.approval_rules)

    async def set_approvals(
        self,
        *,
        allow: Sequence[str] = (),
        deny: Sequence[str] = (),
        ask: Sequence[str] = (),
        by: str | None = None,
        reason: str | None = None,
    ) -> ApprovalRules:
        """Change the approval rules (tool names or globs): ``allow`` or ``deny``
        without asking, ``ask`` again. Waiting calls they cover are decided. A
        session's rules hold for every later run of it."""
        change = rule_change(allow, deny, ask, by, reason)
        return await self._update(AgentHandlers.set_approvals, change, InvalidInputError)

    async def approve(
        self, call_id: str, *, by: str | None = None, always: bool = False
    ) -> Decision:
        """Approve a pending tool call; it then runs as its own activity. ``always``:
        allow this tool without asking for the rest of the run (or session)."""
        return await self._decide("approve", DecisionRequest(id=call_id, by=by, always=always))

    async def reject(
        self, call_id: str, reason: str | None = None, *, by: str | None = None
    ) -> Decision:
        """Reject a pending tool call; the agent is told, with ``reason``."""
        return await self._decide("reject", DecisionRequest(id=call_id, reason=reason, by=by))

    async def provide_input(
        self, question_id: str, answer: str, *, by: str | None = None
    ) -> Decision:
        """Answer a question the agent asked."""
        return await self._decide("answer", DecisionRequest(id=question_id, answer=answer, by=by))

    async def provide_tool_result(
        self,
        call_id: str,
        result: str,
        *,
        is_error: bool = False,
        by: str | None = None,
        message_id: str | None = None,
    ) -> Decision:
        """Send the result of a client tool call the run waits for (``pending()`` lists
        it, kind ``client``; see ``RunOptions.client_tools``); ``is_error``: the tool
        failed, and ``result`` says how; ``message_id``: the result's id in the thread
        (default: one Ratchet makes). A call nothing waits for, or one answered
        already, raises ``InvalidInputError``."""
        request = ToolResultRequest(
            call_id=call_id, content=result, is_error=is_error, by=by, message_id=message_id
        )
        return await self._update(AgentHandlers.provide_tool_result, request)

    async def _decide(self, verdict: DecisionVerdict, request: DecisionRequest) -> Decision:
        try:
            return await self._update(UPDATES[verdict], request, DecisionError)
        except RunFailedError as e:
            if e.error_type != "SessionClosedError":
                raise  # busy: the caller may send it again
            raise DecisionError(e.cause) from e
        except RPCError as e:
            if e.status != RPCStatusCode.NOT_FOUND:
                raise
            raise DecisionError(
                f"{self.noun.capitalize()} {self.id} is not running, so nothing waits for "
                f"{request.id}."
            ) from e
