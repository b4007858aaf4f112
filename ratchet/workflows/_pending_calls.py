"""Workflow side of pending work: approvals, questions, durable tools, sub-agents.

A turn that returns pending actions ends; the run then waits here, in workflow
code, holding no worker slot: for a person's decisions (``approve`` / ``reject``
/ ``provide_input`` Updates, or a timeout), then for the tool activities and
child runs the decisions allow. The results become the next turn's new messages,
so they are written to history once, in that turn's input.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from ratchet.types import (
        DECISIONS_KEPT,
        AgentRecord,
        AgentStatus,
        ApprovalRules,
        Decision,
        Message,
        PendingAction,
        PendingView,
        RuleChange,
        ToolCall,
    )
    from ratchet.wire import TOOL_ACTIVITY, ToolInput

    from ._client_calls import ClientCalls
    from ._failures import failure_text
    from ._presets import retry_policy, spoken

if TYPE_CHECKING:
    from ratchet.wire import DecisionRequest, DecisionVerdict, RunOptions


@dataclass(frozen=True)
class RunSide:
    """What pending work needs of the run it belongs to: values and hooks, never
    the run's loop itself."""

    options: RunOptions
    agent: Callable[[], str]
    """The agent running now (a handoff changes it)."""
    execution_id: Callable[[], str]
    stopped: Callable[[], bool]
    """Whether the run was asked to stop."""
    set_status: Callable[..., None]
    """``set_status(status, waiting=[...])``: the run's status while it waits."""
    run_sub_agent: Callable[[int, PendingAction], Awaitable[Message]]
    audit: SessionAudit
    held: Callable[[Sequence[Message]], None] | None = None
    """Set for a session's log: told of each tool activity's result, which keeps its
    id so that the log's index can point to it in history."""


@dataclass(frozen=True)
class SessionAudit:
    """The session data that approvals keep: its rules and its latest decisions."""

    rules: Callable[[], ApprovalRules]
    set_rules: Callable[[ApprovalRules], None]
    record: Callable[[list[Decision]], None]
    """Keep decisions in the session's audit trail."""
    recorded: Callable[[], list[Decision]]

    @classmethod
    def of(cls, state: Callable[[], AgentRecord]) -> SessionAudit:
        """Kept in ``state().session`` (its ``approvals`` and ``decisions``)."""

        def set_rules(rules: ApprovalRules) -> None:
            current = state()
            current.session = current.session.model_copy(update={"approvals": rules})

        def record(decisions: list[Decision]) -> None:
            current = state()
            kept = [*current.session.decisions, *decisions][-DECISIONS_KEPT:]
            current.session = current.session.model_copy(update={"decisions": kept})

        return cls(
            rules=lambda: state().session.approvals,
            set_rules=set_rules,
            record=record,
            recorded=lambda: state().session.decisions,
        )


PEOPLE = ("approval", "input")
"""The kinds of pending work a person decides."""


class PendingWork:
    """What one run waits for, and what it was told."""

    def __init__(self, run: RunSide) -> None:
        self._run = run
        self._waiting: dict[str, PendingAction] = {}
        self._turn = 0
        self._since = workflow.now()
        self._deadline = None
        self._decisions: dict[str, Decision] = {}
        self.decided: dict[str, Decision] = {}
        """Every decision this run took, by id (the audit trail, and for validators)."""
        self.clients = ClientCalls(run)
        """The client tool calls the run waits for (their results come by Update)."""

    def view(self) -> list[PendingView]:
        run_id = workflow.info().workflow_id
        people = [
            PendingView(
                action=a,
                run_id=run_id,
                turn=self._turn,
                waiting_since=self._since,
                deadline=self._deadline,
            )
            for a in self._waiting.values()
            if a.id not in self._decisions
        ]
        return [*people, *self.clients.view()]

    def validate(self, request: DecisionRequest, verdict: DecisionVerdict) -> None:
        """Raise (rejecting the Update) unless ``request`` decides something waiting."""
        run = workflow.info().workflow_id
        earlier = self.decided.get(request.id) or self._decisions.get(request.id)
        if earlier is not None:
            raise ApplicationError(
                f"{request.id} in run {run} was already {_decided(earlier)}; a decision "
                "cannot be changed.",
                type="DecisionError",
            )
        action = self._waiting.get(request.id)
        if action is None:
            waiting = ", ".join(self._waiting) or "nothing"
            raise ApplicationError(
                f"Run {run} has no pending call or question {request.id!r}; it waits for "
                f"{waiting}. List them with pending().",
                type="DecisionError",
            )
        problem = _mismatch(action, request, verdict)
        if problem is not None:
            raise ApplicationError(problem, type="DecisionError")

    def decide(self, request: DecisionRequest, verdict: DecisionVerdict) -> Decision:
        decision = Decision(
            id=request.id,
            approved=verdict != "reject",
            reason=request.reason,
            answer=request.answer if verdict == "answer" else None,
            by=request.by,
            at=workflow.now(),
            always=request.always and verdict == "approve",
        )
        self._decisions[request.id] = decision
        call = self._waiting[request.id].call
        if decision.always and call is not None:
            reason = f"approved {request.id} with always"
            self.change_rules(RuleChange(allow=[call.name], by=request.by, reason=reason))
        return decision

    def change_rules(self, change: RuleChange) -> ApprovalRules:
        """Change the session's approval rules; calls waiting now that they cover are
        decided at once."""
        rules = self._run.audit.rules().apply(change.model_copy(update={"at": workflow.now()}))
        self._run.audit.set_rules(rules)
        self._apply(rules)
        return rules

    @staticmethod
    def validate_change(change: RuleChange) -> None:
        """Raise (rejecting the Update) unless ``change`` names tools, each once."""
        names = [*change.allow, *change.deny, *change.ask]
        if not names:
            raise ApplicationError(
                "The change names no tools: give allow=, deny= or ask= a tool name or glob.",
                type="InvalidInputError",
            )
        if any(not isinstance(n, str) or not n.strip() for n in names):
            raise ApplicationError("A tool name in the change is empty.", type="InvalidInputError")
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ApplicationError(
                f"{', '.join(twice)} appear(s) in more than one of allow, deny and ask; "
                "give each tool one verdict.",
                type="InvalidInputError",
            )

    def audit(self) -> list[Decision]:
        """The session's latest decisions (those of waits still going on too) and rule
        changes, by time."""
        changes = [
            Decision(
                id=f"rules-{i}",
                kind="rules",
                reason=change.describe() + (f" ({change.reason})" if change.reason else ""),
                by=change.by,
                at=change.at,
            )
            for i, change in enumerate(self._run.audit.rules().changes, 1)
        ]
        entries = [*self._run.audit.recorded(), *self._decisions.values(), *changes]
        return sorted(entries, key=lambda d: d.at or workflow.now())

    def record_policy(self, decisions: list[Decision]) -> None:
        """Keep the calls a turn's agent policy allowed or denied in the audit trail."""
        if decisions:
            now = workflow.now()
            self._run.audit.record([d.model_copy(update={"at": now}) for d in decisions])

    def _apply(self, rules: ApprovalRules) -> None:
        for action in self._waiting.values():
            if action.kind != "approval" or action.call is None or action.id in self._decisions:
                continue
            hit = rules.verdict(action.call.name)
            if hit is not None:
                verdict, pattern = hit
                self._decisions[action.id] = Decision(
                    id=action.id,
                    approved=verdict == "allow",
                    reason=f"session rule: {verdict} {pattern}",
                    by="policy",
                    at=workflow.now(),
                )

    async def settle(self, turn: int, actions: list[PendingAction]) -> list[Message]:
        """Wait for decisions, run what they allow, then wait for the client's tool
        results (a run waits for one thing at a time); the results, in the order of
        ``actions``, each with a workflow-made id (a client's keeps the one it sent, and
        in a session's log a tool activity's result its own)."""
        decisions = await self._decide(turn, [a for a in actions if a.kind in PEOPLE])
        stopped = self._run.stopped()
        await self.clients.wait(turn, [a for a in actions if a.kind == "client"])
        results = await asyncio.gather(
            *(self._resolve(turn, a, decisions.get(a.id), stopped) for a in actions)
        )
        for action, message in zip(actions, results, strict=True):
            if action.kind == "client" and message.id:
                continue  # a client's result keeps the id it sent
            if self._run.held is not None and message.id:  # a tool activity's, as history has it
                self._run.held([message])  # in a session's log it keeps its own id
            else:
                message.id = f"msg_{workflow.uuid4().hex[:16]}"
        return list(results)

    async def _decide(self, turn: int, human: list[PendingAction]) -> dict[str, Decision]:
        """The decisions on ``human`` (the session's rules', then people's), audited."""
        rules = self._run.audit.rules()
        if human and (rules.allow or rules.deny):
            self._waiting = {a.id: a for a in human}
            self._apply(rules)
        if any(a.id not in self._decisions for a in human):
            await self._wait_for_people(turn, human)
        decisions = {a.id: self._decisions.pop(a.id) for a in human}
        self.decided.update(decisions)
        if decisions:
            self._run.audit.record(list(decisions.values()))
        self._waiting = {}
        return decisions

    async def _wait_for_people(self, turn: int, human: list[PendingAction]) -> None:
        run = self._run
        timeout = run.options.approval_timeout
        self._waiting = {a.id: a for a in human}
        self._turn = turn
        self._since = workflow.now()
        self._deadline = self._since + timeout if timeout else None
        status = (
            AgentStatus.AWAITING_APPROVAL
            if any(a.kind == "approval" for a in human)
            else AgentStatus.AWAITING_INPUT
        )
        undecided = [a.describe() for a in human if a.id not in self._decisions]
        run.set_status(status, waiting=undecided)
        try:
            await workflow.wait_condition(
                lambda: run.stopped() or all(a.id in self._decisions for a in human),
                timeout=timeout,
            )
            reason, by = "the run was stopped before anyone decided", "stop"
        except TimeoutError:
            reason, by = f"nobody decided within {spoken(timeout)}", "timeout"
        for action in human:
            if action.id not in self._decisions:
                self._decisions[action.id] = Decision(
                    id=action.id, approved=False, reason=reason, by=by, at=workflow.now()
                )
        run.set_status(AgentStatus.RUNNING)

    async def _resolve(
        self, turn: int, action: PendingAction, decision: Decision | None, stopped: bool
    ) -> Message:
        call = action.call
        if action.kind == "client":
            return self.clients.result(action.id)
        if action.kind == "input":
            assert decision is not None
            if decision.answer is None:
                text = f"(no answer: {decision.reason})"
                return Message.tool(call, text, is_error=True) if call else Message.user(text)
            return Message.tool(call, decision.answer) if call else Message.user(decision.answer)
        assert call is not None
        if decision is not None and not decision.approved:
            if decision.by in ("stop", "timeout"):  # nobody decided: not a rejection
                return Message.tool(call, f"Not run: {decision.reason}.", is_error=True)
            reason = f": {decision.reason}" if decision.reason else ""
            return Message.tool(
                call, f"The user rejected this call{reason}. It was not run.", is_error=True
            )
        if stopped:
            return Message.tool(call, "Not run: the run was stopped first.", is_error=True)
        if action.kind == "agent":
            return await self._run.run_sub_agent(turn, action)
        return await self._run_tool(turn, action, call)

    async def _run_tool(self, turn: int, action: PendingAction, call: ToolCall) -> Message:
        run = self._run
        timeout = (
            timedelta(seconds=action.timeout_seconds)
            if action.timeout_seconds
            else run.options.turn_timeout
        )
        try:
            return await workflow.execute_activity(
                TOOL_ACTIVITY,
                ToolInput(
                    agent=run.agent(),
                    call=call,
                    execution_id=run.execution_id(),
                    turn=turn,
                    tool_interceptor=run.options.tool_interceptor,
                ),
                result_type=Message,
                task_queue=run.options.task_queue,
                start_to_close_timeout=timeout,
                retry_policy=retry_policy(run.options, action.max_attempts),
                summary=f"tool · {call.describe(50)}",
            )
        except ActivityError as e:
            text = f"Error: {call.name} failed: {failure_text(e)}"
            return Message.tool(call, text, is_error=True)


def _decided(decision: Decision) -> str:
    """How a decision went, and by whom: ``approved by oncall``."""
    if decision.answer is not None:
        what = "answered"
    else:
        what = "approved" if decision.approved else "rejected"
    return f"{what} by {decision.by}" if decision.by else what


def _mismatch(
    action: PendingAction, request: DecisionRequest, verdict: DecisionVerdict
) -> str | None:
    """Why ``verdict`` cannot decide ``action`` as ``request`` asks (``None``: it can)."""
    if verdict == "answer" and action.kind != "input":
        return (
            f"{request.id} is a tool call awaiting approval; approve or reject it "
            "(ratchet sessions approve / reject)."
        )
    if verdict != "answer" and action.kind == "input":
        return (
            f"{request.id} is a question ({action.question!r}); answer it with "
            "provide_input() (ratchet sessions answer ID QUESTION_ID TEXT)."
        )
    if request.always and verdict != "approve":
        return (
            "always=True goes with an approval (allow the tool for the rest of the "
            "session); to stop it running, change the rules with set_approvals(deny=...)."
        )
    if verdict == "answer" and not (request.answer or "").strip():
        return f"The answer to {request.id} is empty; send some text."
    return None
