"""Calls of client tools a run waits for (``ratchet.agents._client_tools``).

The run waits in workflow code, holding no worker, until its caller sends each
call's result (the ``provide_tool_result`` Update) or ``RunOptions.client_tool_timeout``
passes, when the model is told no result came. The results are the next turn's tool
messages. A call takes one result: another for the same call, or one for a call
nothing waits for, is refused (``InvalidInputError``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from ratchet.types import AgentStatus, Decision, Message, PendingAction, PendingView
    from ratchet.wire import ToolResultRequest

    from ._presets import spoken

if TYPE_CHECKING:
    from ._pending_calls import RunSide


class ClientCalls:
    """The client tool calls one run waits for, and the results it was sent."""

    def __init__(self, run: RunSide) -> None:
        self._run = run
        self._waiting: dict[str, PendingAction] = {}
        self._results: dict[str, Message] = {}
        self._turn = 0
        self._since = workflow.now()
        self.answered: dict[str, Decision] = {}
        """The results this run took, by call id (its audit trail)."""

    def view(self) -> list[PendingView]:
        run_id = workflow.info().workflow_id
        deadline = self._since + self._run.options.client_tool_timeout
        return [
            PendingView(
                action=a,
                run_id=run_id,
                turn=self._turn,
                waiting_since=self._since,
                deadline=deadline,
            )
            for a in self._waiting.values()
            if a.id not in self._results
        ]

    def validate(self, request: ToolResultRequest) -> None:
        """Raise (refusing the Update) unless ``request`` answers a call that waits."""
        run, call = workflow.info().workflow_id, request.call_id
        if call in self.answered:
            raise ApplicationError(
                f"Client tool call {call!r} of run {run} has its result already; a call "
                "takes one result.",
                type="InvalidInputError",
            )
        if call not in self._waiting:
            waiting = ", ".join(self._waiting) or "none"
            raise ApplicationError(
                f"Run {run} waits for no client tool call {call!r} (it waits for {waiting}); "
                "send results only for the calls pending() lists.",
                type="InvalidInputError",
            )

    def take(self, request: ToolResultRequest) -> Decision:
        action = self._waiting[request.call_id]
        assert action.call is not None
        content = request.content
        result = Message.tool(action.call, content, is_error=request.is_error)
        result.id = request.message_id or ""  # else the workflow gives it one
        self._results[action.id] = result
        decision = Decision(
            id=action.id,
            approved=not request.is_error,
            answer=content,
            by=request.by,
            at=workflow.now(),
        )
        self.answered[action.id] = decision
        return decision

    async def wait(self, turn: int, actions: list[PendingAction]) -> None:
        """Wait for the results of ``actions`` (or the run's stop, or the timeout);
        then ``result`` gives each call's tool message."""
        if not actions:
            return
        run, timeout = self._run, self._run.options.client_tool_timeout
        self._waiting = {a.id: a for a in actions}
        self._turn, self._since = turn, workflow.now()
        run.set_status(AgentStatus.AWAITING_CLIENT, waiting=[a.describe() for a in actions])
        try:
            await workflow.wait_condition(
                lambda: run.stopped() or all(a.id in self._results for a in actions),
                timeout=timeout,
            )
            missing = "Not run: the run was stopped before the client sent its result."
        except TimeoutError:
            missing = (
                f"Error: the client sent no result within {spoken(timeout)}; "
                "the call may not have run."
            )
        for action in actions:
            assert action.call is not None
            if action.id not in self._results:
                self._results[action.id] = Message.tool(action.call, missing, is_error=True)
        self._waiting = {}
        run.set_status(AgentStatus.RUNNING)

    def result(self, call_id: str) -> Message:
        """The tool message of a call ``wait`` waited for (once)."""
        return self._results.pop(call_id)
