"""Sub-agents: a tool call that runs another agent as a child ``AgentRun``
(``sub_agent_type``)."""

from __future__ import annotations

from collections.abc import Callable

from temporalio import workflow
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.exceptions import ApplicationError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from ratchet.types import Message, PendingAction
    from ratchet.wire import (
        AGENT_OWNER,
        AGENT_TENANT,
        RunInput,
        RunOptions,
        RunResult,
        StopRequest,
    )

    from ._failures import failure_text
    from ._ledger import RunLedger, workflow_message_id
    from ._patches import OWNER_CARRIED, patched, sub_agent_type
    from ._progress import run_details


class SubAgents:
    """Runs sub-agents for one run: their usage counts in the run's and they draw
    on its token budget; a stop of the run stops them, keeping what they finished."""

    def __init__(
        self,
        options: RunOptions,
        ledger: RunLedger,
        stop_request: Callable[[], StopRequest | None],
    ) -> None:
        self._options = options
        self._ledger = ledger
        self._stop_request = stop_request

    async def run(self, turn: int, action: PendingAction) -> Message:
        """Run ``action.agent`` on the call's ``input``; its answer is the call's result."""
        ledger = self._ledger
        call = action.call
        assert call is not None and action.agent is not None
        try:
            prompt = str(call.parsed_arguments().get("input") or "").strip()
        except ValueError:
            prompt = ""
        if not prompt:
            return Message.tool(
                call, 'Error: give the sub-agent a task: {"input": "..."}.', is_error=True
            )
        options = self._options
        if options.token_budget is not None:
            left = options.token_budget - ledger.execution.usage.total_tokens
            options = options.model_copy(update={"token_budget": max(0, left)})
        parent = workflow.info().workflow_id
        try:
            child = await workflow.start_child_workflow(
                sub_agent_type(),
                RunInput(
                    agent=action.agent,
                    messages=[Message(role="user", content=prompt, id=workflow_message_id())],
                    options=options,
                    parent_agent_id=ledger.state.session.agent_id,
                    parent_workflow_id=parent,
                ),
                id=f"sub-{ledger.execution.execution_id}-{turn}-{call.id}",
                result_type=RunResult,
                search_attributes=_owned(),
                static_summary=f"{action.agent} · sub-agent of {ledger.agent}",
                static_details=run_details(
                    action.agent,
                    [Message.user(prompt)],
                    session=None,
                    parent=f"{ledger.agent} ({parent})",
                ),
            )
            await workflow.wait_condition(lambda: child.done() or self._stop_request() is not None)
            stop = self._stop_request()
            if not child.done() and stop is not None:
                await child.signal("stop", stop)  # it returns what it finished
            result: RunResult = await child
        except ChildWorkflowError as e:
            cause = e.cause
            if isinstance(cause, ApplicationError) and cause.type == "BudgetExceededError":
                ledger.fail("BudgetExceededError", f"Sub-agent {action.agent}: {cause.message}")
            return Message.tool(
                call, f"Error: sub-agent {action.agent} failed: {failure_text(e)}", is_error=True
            )
        ledger.add_usage(result.usage)
        return Message.tool(call, result.output)


def _owned() -> TypedSearchAttributes | None:
    """The owner and tenant of this run or session, for its sub-agent's run: the
    front door lets the owner reach it (and lists it as theirs) too."""
    found = workflow.info().typed_search_attributes
    pairs = [
        SearchAttributePair(key, value)
        for key in (AGENT_OWNER, AGENT_TENANT)
        if (value := found.get(key)) is not None
    ]
    if not pairs or not patched(OWNER_CARRIED):  # unowned: the command as before
        return None
    return TypedSearchAttributes(pairs)
