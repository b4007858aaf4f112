"""The first session workflow (type ``AgentSessionWorkflow``), kept so that
sessions started on it replay and go on: at its next continue-as-new each moves
to the current ``AgentSession`` workflow, its thread by reference.

The session holds session data only (thread, state, metadata). Each message a
user sends starts one execution, an ``AgentRunWorkflow`` child, so the Temporal
UI shows session → runs → turns. A child continues the session's thread by
reference: its input names the session's thread and version, never the messages,
and its turns read them from the session through the ``ratchet.thread`` query.
When the run ends the session appends the messages it added and takes its state.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from temporalio.contrib.workflow_streams import WorkflowStream

    from ratchet.agents.events import RunEvent
    from ratchet.agents.messages import Message, approximate_size
    from ratchet.agents.pending import PendingView
    from ratchet.agents.state import AgentSession, AgentState, AgentStatus, ThreadData
    from ratchet.errors import BudgetExceededError, InvalidInputError, UsageError
    from ratchet.wire.names import SESSION_WORKFLOW
    from ratchet.wire.runs import RunInput, RunResult, StopRequest, new_messages
    from ratchet.wire.sessions import SendRequest, SessionInput, SessionStatus

    from .agent_run import AgentRunWorkflow
    from .observe import EventStream, Index, RunProgress
    from .runner import run_details
    from .session import EVENT_BYTES_CARRIED, EVENTS_CARRIED, root_cause, session_markdown
    from .state import state_registry
    from .threads import thread_registry

SESSION_THREAD_LIMIT = 1536 * 1024
"""Largest thread a legacy session carried into a new workflow run (a payload holds 2 MB)."""
V2_PATCH = "ratchet.session-v2"
"""Legacy sessions move to the current session workflow at their next continue-as-new."""


@workflow.defn(name="AgentSessionWorkflow", failure_exception_types=[UsageError])
class AgentSessionWorkflowV1:
    """A conversation that lives for ever; ``send`` (an Update) runs one execution."""

    @workflow.init
    def __init__(self, input: SessionInput) -> None:
        info = workflow.info()
        session = input.session or AgentSession.new(
            input.agent,
            workflow.now(),
            session_id=input.session_id or info.workflow_id,
            thread_id=f"thread-{workflow.uuid4().hex[:12]}",
            thread_kind=input.options.run.thread_kind,
        )
        self.agent = input.agent
        self.state = AgentState(session=session)
        self._options = input.options
        self._runs = input.runs
        self._runs_this_workflow_run = 0
        self._tickets = 0
        self._serving = 0
        self._current: str | None = None
        self._child: workflow.ChildWorkflowHandle | None = None
        self._stop_request: StopRequest | None = None
        self._used = input.used_tokens
        self._closed = False
        self._turns = input.turns
        self._cost = input.cost_usd
        self._run_status: AgentStatus | None = None
        self._waiting_for: list[str] = []
        self._pending: list[PendingView] = []
        self._events = EventStream(WorkflowStream(input.stream))
        self._index = Index()
        self._thread_bytes = sum(approximate_size(m) for m in session.thread.messages)
        thread_registry().register(lambda: self.state.session.thread)
        state_registry().register(self)

    def state_changed(self, event: object) -> None:  # StateOwner: runs commit, not the session
        return None

    @workflow.run
    async def run(self, input: SessionInput) -> SessionStatus:
        input.options.check()  # a bad value fails the session (UsageError), never wedges it
        self._show()
        while True:
            await workflow.wait_condition(
                lambda: (self._closed or self._continue_as_new_due(any_size=True)) and self._idle()
            )
            if not self._closed and not self._continue_as_new_due():
                # Over the old size guard: only code with the V2 patch moves on from here.
                if not workflow.patched(self._v2_patch()):
                    await workflow.wait_condition(lambda: self._closed or not self._idle())
                    continue
            self._events.stream.detach_pollers()  # watchers read the rest by query
            if self._closed:
                self._show()
                await workflow.wait_condition(workflow.all_handlers_finished)
                return self.status()
            await workflow.wait_condition(workflow.all_handlers_finished)
            if not self._idle():
                continue  # a message arrived while handlers finished
            if workflow.patched(self._v2_patch()):
                workflow.continue_as_new(workflow=SESSION_WORKFLOW, args=[self._moved()])
            workflow.continue_as_new(
                SessionInput(
                    agent=self.agent,
                    session=self.state.session,
                    options=self._options,
                    runs=self._runs,
                    used_tokens=self._used,
                    turns=self._turns,
                    cost_usd=self._cost,
                    stream=self._events.state(),
                )
            )

    def _v2_patch(self) -> str:
        """The patch asked at each chance to move (``workflow.patched`` remembers its
        first answer per id, and the first chance may come while replaying)."""
        return f"{V2_PATCH}@{self._runs}"

    def _moved(self) -> SessionInput:
        """The input of the current session workflow: the thread stays here, by
        reference (this run answers the ``ratchet.thread`` query once closed)."""
        info = workflow.info()
        moved = self.state.session.thread.continued(info.workflow_id, info.run_id)
        return SessionInput(
            agent=self.agent,
            session=self.state.session.model_copy(update={"thread": moved}),
            options=self._options,
            runs=self._runs,
            used_tokens=self._used,
            turns=self._turns,
            cost_usd=self._cost,
            stream=self._events.carried(max_events=EVENTS_CARRIED, max_bytes=EVENT_BYTES_CARRIED),
        )

    def _show(self) -> None:
        """Index the session's status and totals, and show them in its details."""
        status = self.status()
        shown = self._run_status or ("RUNNING" if status.status == "RUNNING" else None)
        shown = shown or ("COMPLETED" if status.status == "CLOSED" else "PENDING")
        self._index.update(
            agent=self.agent,
            session_id=self.state.session.info.id,
            status=str(shown),
            turns=self._turns,
            tokens=self._used,
            cost_usd=round(self._cost, 6),
        )
        workflow.set_current_details(session_markdown(status, str(shown)))

    @workflow.signal(name="ratchet.run_progress")
    def run_progress(self, progress: RunProgress) -> None:
        """The run in progress started or stopped waiting for someone."""
        if progress.run_id != self._current:
            return  # a run that has ended since
        self._run_status = progress.status
        self._waiting_for = progress.waiting
        self._pending = progress.pending
        self._show()

    def _idle(self) -> bool:
        return self._serving == self._tickets

    def _continue_as_new_due(self, *, any_size: bool = False) -> bool:
        if self._thread_bytes > SESSION_THREAD_LIMIT and not any_size:
            return False  # too large for one payload: carry on in this run
        limit = self._options.continue_as_new_after_runs
        return workflow.info().is_continue_as_new_suggested() or (
            limit is not None and self._runs_this_workflow_run >= limit
        )

    @workflow.update
    async def send(self, request: SendRequest) -> RunResult:
        """Run the agent on ``request.messages`` (after any queued before them)."""
        ticket = self._tickets
        self._tickets += 1
        if self._options.steering == "interrupt" and self._current is not None:
            await self._stop_run(StopRequest(status="INTERRUPTED", reason="a newer message"))
        await workflow.wait_condition(lambda: self._serving == ticket)
        try:
            return await self._execute(request.messages)
        finally:
            self._serving += 1
            self._show()

    @send.validator
    def _validate_send(self, request: SendRequest) -> None:
        if self._closed:
            raise ApplicationError(
                f"Session {workflow.info().workflow_id} is closed; start a new one.",
                type="SessionClosed",
            )
        try:
            new_messages(request.messages, lambda: "checked")
        except InvalidInputError as e:
            raise ApplicationError(str(e), type="InvalidInputError") from e
        self._check_budget()
        if self._options.steering == "reject" and not self._idle():
            raise ApplicationError(
                f"Session {workflow.info().workflow_id} is running {self._current}; it rejects "
                "messages until that run ends (SessionOptions(steering='queue') queues them).",
                type="SessionBusy",
            )

    def _check_budget(self) -> None:
        budget = self._options.token_budget
        if budget is not None and self._used >= budget:
            raise ApplicationError(
                str(BudgetExceededError(self._used, budget, scope="session")),
                type="BudgetExceededError",
            )

    async def _execute(self, messages: list[Message]) -> RunResult:
        info = workflow.info()
        session = self.state.session
        thread = session.thread
        child_thread = thread.continued(info.workflow_id, info.run_id)
        self._check_budget()  # again: the runs this message queued behind may have spent it
        options = self._options.run
        budget = self._options.token_budget
        if budget is not None:
            options = options.model_copy(update={"token_budget": budget - self._used})
        self._runs += 1
        self._runs_this_workflow_run += 1
        self._current = f"{session.info.id}-run-{self._runs}"
        self._stop_request = None
        try:
            self._child = await workflow.start_child_workflow(
                AgentRunWorkflow.run,
                RunInput(
                    agent=self.agent,
                    messages=messages,
                    session=session.model_copy(update={"thread": child_thread}),
                    options=options,
                    report_to=info.workflow_id if self._index.enabled else None,
                ),
                id=self._current,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                static_summary=f"{self.agent} · run {self._runs}",
                static_details=run_details(
                    self.agent, messages, session=info.workflow_id, parent=None
                ),
            )
            self._events.publish(
                RunEvent(
                    kind="run_started", run_id=self._current, agent=self.agent, text=self.agent
                )
            )
            self._show()
            if self._stop_request is not None:  # asked for while the run was starting
                await self._stop_run(self._stop_request)
            result: RunResult = await self._child
        except Exception as e:
            # The run failed: the session keeps what it had and stays usable.
            cause = root_cause(e)
            text = getattr(cause, "message", None) or str(cause)
            self._finished(AgentStatus.FAILED, text)
            message = f"Run {self._current} of session {info.workflow_id} failed: {text}"
            if getattr(cause, "type", None) == "BudgetExceededError" and budget is not None:
                self._used = budget
                message = f"The session has spent its token_budget of {budget}. {message}"
                raise ApplicationError(message, type="BudgetExceededError") from e
            raise ApplicationError(message, type="RunFailed", non_retryable=True) from e
        finally:
            self._current = None
            self._child = None
            self._run_status, self._waiting_for, self._pending = None, [], []
        self._used += result.usage.total_tokens
        self._turns += result.turns
        self._cost += result.usage.cost_usd
        self._finished(result.status, result.output, run_id=result.workflow_id)
        self.agent = result.agent  # a handoff moves the session to another agent
        self.state.session = session.model_copy(
            update={
                "thread": thread.model_copy(
                    update={"messages": [*thread.messages, *result.messages]}
                ),
                "state": result.state,
                "info": session.info.touch(workflow.now()),
            }
        )
        self._thread_bytes += sum(approximate_size(m) for m in result.messages)
        # The messages and state are in the run's result already; the caller gets the rest.
        return result.model_copy(update={"messages": [], "state": {}})

    def _finished(self, status: AgentStatus, text: str, run_id: str | None = None) -> None:
        self._events.publish(
            RunEvent(
                kind="run_finished",
                run_id=run_id or self._current or "",
                agent=self.agent,
                text=text,
                data={"status": status.value},
            )
        )

    @workflow.update
    async def wait_run(self) -> str | None:
        """Wait until a run is in progress and return its workflow id (``None`` if the
        session closes or continues as new first)."""
        await workflow.wait_condition(
            lambda: self._child is not None or self._closed or self._continue_as_new_due()
        )
        return self._current if self._child is not None else None

    @workflow.update
    async def cancel(self) -> SessionStatus:
        """Stop the run in progress at its next safe point (its send returns with
        status CANCELLED and the turns it finished); the session stays usable."""
        if self._current is not None:
            await self._stop_run(StopRequest(status="CANCELLED", reason="cancelled"))
        return self.status()

    async def _stop_run(self, request: StopRequest) -> None:
        """Ask the run in progress to stop. A run still starting gets it once started;
        a run that has just ended needs nothing, so a failed signal is only logged."""
        self._stop_request = request
        if self._child is None:
            return
        try:
            await self._child.signal(AgentRunWorkflow.stop, request)
        except Exception as e:  # the child closed between the check and the signal
            workflow.logger.info("Run %s did not take the stop: %s", self._current, e)

    @workflow.update
    async def close(self) -> SessionStatus:
        """Stop taking messages; queued ones still run. The workflow then completes."""
        self._closed = True
        await workflow.wait_condition(self._idle)
        return self.status()

    @workflow.query
    def status(self) -> SessionStatus:
        running = not self._idle()
        return SessionStatus(
            agent=self.agent,
            status="CLOSED"
            if self._closed and not running
            else "RUNNING"
            if running
            else "PENDING",
            runs=self._runs,
            waiting=max(0, self._tickets - self._serving - 1),
            current_run=self._current,
            used_tokens=self._used,
            token_budget=self._options.token_budget,
            run_status=self._run_status,
            waiting_for=self._waiting_for,
            turns=self._turns,
            cost_usd=self._cost,
        )

    @workflow.query
    def pending(self) -> list[PendingView]:
        """What the run in progress waits for (approvals, questions), as it last said."""
        return self._pending

    @workflow.query
    def session(self) -> AgentState:
        """Session data (between runs the execution is ``None``: status PENDING)."""
        return self.state

    @workflow.query
    def thread(self) -> ThreadData:
        return self.state.session.thread
