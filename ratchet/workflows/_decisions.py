"""The Updates and queries a run and a session share: what the run waits for and
its state, and those through which people decide for it (approvals, rejections,
answers, client tool results, approval rules). Each workflow keeps its
``AgentRunner`` as ``self._runner``; the client calls these by reference
(``ratchet.client._handle``)."""

from __future__ import annotations

from typing import Protocol, cast

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ratchet.types import AgentRecord, ApprovalRules, Decision, PendingView, RuleChange
    from ratchet.wire import DecisionRequest, DecisionVerdict, ToolResultRequest

    from ._pending_calls import PendingWork


class _Runner(Protocol):
    """What the handlers use of the workflow's ``AgentRunner``."""

    pending: PendingWork

    @property
    def state(self) -> AgentRecord: ...


class AgentHandlers:
    """``pending`` and ``state``; ``approve`` / ``reject`` / ``provide_input``,
    ``provide_tool_result``, ``set_approvals``, ``approval_rules`` and ``decisions``,
    on the runner's pending work."""

    @property
    def _decider(self) -> _Runner:
        return cast(_Runner, getattr(self, "_runner"))  # noqa: B009 - set by the workflow

    def _decision_received(self) -> None:
        """Called for each accepted Update (a session counts them)."""

    def _check_can_decide(self, request_id: str) -> None:
        """Raise (rejecting the Update) when nothing can wait for ``request_id``."""

    def _rules_changed(self) -> None:
        """Called after the approval rules changed (a session shows them)."""

    def _waiting(self) -> bool:
        """Whether a run is in progress to wait for anything (a session may be idle)."""
        return True

    @workflow.query
    def pending(self) -> list[PendingView]:
        """What the run in progress waits for: approvals, questions, client tool calls."""
        return self._decider.pending.view() if self._waiting() else []

    @workflow.query(name="state")
    def current_state(self) -> AgentRecord:
        """Session and execution data (a session between runs: execution ``None``,
        status PENDING). The thread holds this workflow run's messages; earlier ones
        are named by its ``base``."""
        return self._decider.state

    @workflow.update
    def approve(self, request: DecisionRequest) -> Decision:
        """Approve a pending tool call: it runs as its own activity. With ``always``,
        calls to the same tool are allowed without asking for the rest of the session."""
        return self._decide(request, "approve")

    @approve.validator
    def _validate_approve(self, request: DecisionRequest) -> None:
        self._check_decision(request, "approve")

    @workflow.update
    def reject(self, request: DecisionRequest) -> Decision:
        """Reject a pending tool call; the model is told, with ``reason``."""
        return self._decide(request, "reject")

    @reject.validator
    def _validate_reject(self, request: DecisionRequest) -> None:
        self._check_decision(request, "reject")

    @workflow.update
    def provide_input(self, request: DecisionRequest) -> Decision:
        """Answer a question the agent asked (``ask_user`` or ``request_input``)."""
        return self._decide(request, "answer")

    @provide_input.validator
    def _validate_provide_input(self, request: DecisionRequest) -> None:
        self._check_decision(request, "answer")

    @workflow.update
    def provide_tool_result(self, request: ToolResultRequest) -> Decision:
        """The result of a client tool call the run waits for (``RunOptions.client_tools``)."""
        self._decision_received()
        return self._decider.pending.clients.take(request)

    @provide_tool_result.validator
    def _validate_provide_tool_result(self, request: ToolResultRequest) -> None:
        self._decider.pending.clients.validate(request)

    @workflow.update
    def set_approvals(self, change: RuleChange) -> ApprovalRules:
        """Change the session's approval rules: ``allow`` / ``deny`` tools without
        asking, or ``ask`` about them again. Calls waiting now that the new rules
        cover are decided at once; the change is in ``decisions()``. The rules are
        session data: they hold for later runs and across continue-as-new."""
        self._decision_received()
        rules = self._decider.pending.change_rules(change)
        self._rules_changed()
        return rules

    @set_approvals.validator
    def _validate_set_approvals(self, change: RuleChange) -> None:
        self._decider.pending.validate_change(change)

    @workflow.query
    def approval_rules(self) -> ApprovalRules:
        """The session's own approval rules and their latest changes."""
        return self._decider.state.session.approvals

    @workflow.query
    def decisions(self) -> list[Decision]:
        """Every approval, rejection and answer of the run (in a session: the run in
        progress, or the last one), and the latest changes to the rules, by time."""
        return self._decider.pending.audit()

    def _decide(self, request: DecisionRequest, verdict: DecisionVerdict) -> Decision:
        self._decision_received()
        decision = self._decider.pending.decide(request, verdict)
        if decision.always:
            self._rules_changed()
        return decision

    def _check_decision(self, request: DecisionRequest, verdict: DecisionVerdict) -> None:
        self._check_can_decide(request.id)
        self._decider.pending.validate(request, verdict)
