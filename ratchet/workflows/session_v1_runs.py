"""The legacy session's runs: each message an ``AgentRunWorkflow`` child that
continues the session's thread by reference; the session appends what it added."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from temporalio import workflow
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from ratchet.agents.events import RunFinished, RunFinishedData, RunStarted
    from ratchet.agents.messages import Message, approximate_size
    from ratchet.agents.pending import PendingView
    from ratchet.agents.state import AgentState, AgentStatus
    from ratchet.errors import BudgetExceededError
    from ratchet.wire.options import SessionOptions
    from ratchet.wire.runs import RunInput, RunResult, StopRequest

    from .agent_run import AgentRunWorkflow
    from .failures import root_cause
    from .observe import EventStream, RunProgress
    from .progress import run_details
    from .session_view import SessionTotals


@dataclass
class ChildRun:
    """The run in progress, as the session knows it."""

    label: str
    handle: workflow.ChildWorkflowHandle | None = None
    stop_request: StopRequest | None = None
    status: AgentStatus | None = None
    """What it last reported (while it waits for someone)."""
    waiting_for: list[str] = field(default_factory=list)
    pending: list[PendingView] = field(default_factory=list)


class LegacyRuns:
    def __init__(
        self,
        state: AgentState,
        options: SessionOptions,
        totals: SessionTotals,
        events: EventStream,
        *,
        report: Callable[[], bool],
        show: Callable[[], None],
    ) -> None:
        self._state = state
        self._options = options
        self._totals = totals
        self._events = events
        self._report = report
        """Whether runs report their progress (runs started on code with the index)."""
        self._show = show
        self.current: ChildRun | None = None
        self.thread_bytes = sum(approximate_size(m) for m in state.session.thread.messages)

    def check_budget(self) -> None:
        budget, used = self._options.token_budget, self._totals.used_tokens
        if budget is not None and used >= budget:
            raise ApplicationError(
                str(BudgetExceededError(used, budget, scope="session")),
                type="BudgetExceededError",
            )

    async def execute(self, messages: list[Message]) -> RunResult:
        info, totals = workflow.info(), self._totals
        session = self._state.session
        thread = session.thread
        child_thread = thread.continued(info.workflow_id, info.run_id)
        self.check_budget()  # again: the runs this message queued behind may have spent it
        options = self._options.run
        budget = self._options.token_budget
        if budget is not None:
            options = options.model_copy(update={"token_budget": budget - totals.used_tokens})
        totals.runs += 1
        totals.runs_this_workflow_run += 1
        run = self.current = ChildRun(label=f"{session.info.id}-run-{totals.runs}")
        try:
            run.handle = await workflow.start_child_workflow(
                AgentRunWorkflow.run,
                RunInput(
                    agent=totals.agent,
                    messages=messages,
                    session=session.model_copy(update={"thread": child_thread}),
                    options=options,
                    report_to=info.workflow_id if self._report() else None,
                ),
                id=run.label,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                static_summary=f"{totals.agent} · run {totals.runs}",
                static_details=run_details(
                    totals.agent, messages, session=info.workflow_id, parent=None
                ),
            )
            self._events.publish(
                RunStarted(run_id=run.label, agent=totals.agent, text=totals.agent)
            )
            self._show()
            if run.stop_request is not None:  # asked for while the run was starting
                await self.stop(run.stop_request)
            result: RunResult = await run.handle
        except Exception as e:
            # The run failed: the session keeps what it had and stays usable.
            cause = root_cause(e)
            text = getattr(cause, "message", None) or str(cause)
            self._finished(AgentStatus.FAILED, text, run.label)
            message = f"Run {run.label} of session {info.workflow_id} failed: {text}"
            if getattr(cause, "type", None) == "BudgetExceededError" and budget is not None:
                totals.used_tokens = budget
                message = f"The session has spent its token_budget of {budget}. {message}"
                raise ApplicationError(message, type="BudgetExceededError") from e
            raise ApplicationError(message, type="RunFailed", non_retryable=True) from e
        finally:
            self.current = None
        totals.used_tokens += result.usage.total_tokens
        totals.turns += result.turns
        totals.cost_usd += result.usage.cost_usd
        self._finished(result.status, result.output, result.workflow_id)
        totals.agent = result.agent  # a handoff moves the session to another agent
        self._state.session = session.model_copy(
            update={
                "thread": thread.model_copy(
                    update={"messages": [*thread.messages, *result.messages]}
                ),
                "state": result.state,
                "info": session.info.touch(workflow.now()),
            }
        )
        self.thread_bytes += sum(approximate_size(m) for m in result.messages)
        # The messages and state are in the run's result already; the caller gets the rest.
        return result.model_copy(update={"messages": [], "state": {}})

    def _finished(self, status: AgentStatus, text: str, run_id: str) -> None:
        self._events.publish(
            RunFinished(
                run_id=run_id,
                agent=self._totals.agent,
                text=text,
                data=RunFinishedData(status=status),
            )
        )

    async def stop(self, request: StopRequest) -> None:
        """Ask the run in progress to stop. A run still starting gets it once started;
        a run that has just ended needs nothing, so a failed signal is only logged."""
        run = self.current
        if run is None:
            return
        run.stop_request = request
        if run.handle is None:
            return
        try:
            await run.handle.signal(AgentRunWorkflow.stop, request)
        except Exception as e:  # the child closed between the check and the signal
            workflow.logger.info("Run %s did not take the stop: %s", run.label, e)

    def progress(self, progress: RunProgress) -> bool:
        """The run in progress started or stopped waiting for someone."""
        run = self.current
        if run is None or progress.run_id != run.label:
            return False  # a run that has ended since
        run.status, run.waiting_for, run.pending = (
            progress.status,
            progress.waiting,
            progress.pending,
        )
        return True
