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

from dataclasses import dataclass

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from temporalio.contrib.workflow_streams import WorkflowStream, WorkflowStreamState

    from ratchet.agents.pending import PendingView
    from ratchet.agents.state import AgentSession, AgentState, ThreadData
    from ratchet.errors import InvalidInputError, UsageError
    from ratchet.wire.names import SESSION_WORKFLOW
    from ratchet.wire.runs import RunResult, StopRequest, new_messages
    from ratchet.wire.sessions import SendRequest, SessionInput, SessionStatus

    from .observe import EventStream, Index, RunProgress
    from .session_runs import EVENT_BYTES_CARRIED, EVENTS_CARRIED
    from .session_v1_runs import LegacyRuns
    from .session_view import SessionTotals, session_markdown
    from .state import state_registry
    from .threads import thread_registry

SESSION_THREAD_LIMIT = 1536 * 1024
"""Largest thread a legacy session carried into a new workflow run (a payload holds 2 MB)."""
V2_PATCH = "ratchet.session-v2"
"""Legacy sessions move to the current session workflow at their next continue-as-new."""


@dataclass
class _Line:
    """Sends in order: each waits for its ticket to be served."""

    tickets: int = 0
    serving: int = 0
    closed: bool = False

    @property
    def idle(self) -> bool:
        return self.serving == self.tickets


@workflow.defn(name="AgentSessionWorkflow", failure_exception_types=[UsageError])
class AgentSessionWorkflowV1:
    """A conversation that lives for ever; ``send`` (an Update) runs one execution."""

    @workflow.init
    def __init__(self, input: SessionInput) -> None:
        session = input.session or AgentSession.new(
            input.agent,
            workflow.now(),
            session_id=input.session_id or workflow.info().workflow_id,
            thread_id=f"thread-{workflow.uuid4().hex[:12]}",
            thread_kind=input.options.run.thread_kind,
        )
        self.state = AgentState(session=session)
        self._options = input.options
        self._totals = SessionTotals.carried(input)
        self._line = _Line()
        self._events = EventStream(WorkflowStream(input.stream))
        self._index = Index()
        self._runs = LegacyRuns(
            self.state,
            self._options,
            self._totals,
            self._events,
            report=lambda: self._index.enabled,
            show=self._show,
        )
        thread_registry().register(lambda: self.state.session.thread)
        state_registry().register(self)

    @property
    def agent(self) -> str:
        return self._totals.agent

    def state_changed(self, event: object) -> None:  # StateOwner: runs commit, not the session
        return None

    @workflow.run
    async def run(self, input: SessionInput) -> SessionStatus:
        input.options.check()  # a bad value fails the session (UsageError), never wedges it
        self._show()
        line = self._line
        while True:
            await workflow.wait_condition(
                lambda: (line.closed or self._continue_as_new_due(any_size=True)) and line.idle
            )
            if not line.closed and not self._continue_as_new_due():
                # Over the old size guard: only code with the V2 patch moves on from here.
                if not workflow.patched(self._v2_patch()):
                    await workflow.wait_condition(lambda: line.closed or not line.idle)
                    continue
            self._events.stream.detach_pollers()  # watchers read the rest by query
            if line.closed:
                self._show()
                await workflow.wait_condition(workflow.all_handlers_finished)
                return self.status()
            await workflow.wait_condition(workflow.all_handlers_finished)
            if not line.idle:
                continue  # a message arrived while handlers finished
            if workflow.patched(self._v2_patch()):
                workflow.continue_as_new(workflow=SESSION_WORKFLOW, args=[self._moved()])
            workflow.continue_as_new(self._next_input(self.state.session, self._events.state()))

    def _v2_patch(self) -> str:
        """The patch asked at each chance to move (``workflow.patched`` remembers its
        first answer per id, and the first chance may come while replaying)."""
        return f"{V2_PATCH}@{self._totals.runs}"

    def _moved(self) -> SessionInput:
        """The input of the current session workflow: the thread stays here, by
        reference (this run answers the ``ratchet.thread`` query once closed)."""
        info = workflow.info()
        moved = self.state.session.thread.continued(info.workflow_id, info.run_id)
        return self._next_input(
            self.state.session.model_copy(update={"thread": moved}),
            self._events.carried(max_events=EVENTS_CARRIED, max_bytes=EVENT_BYTES_CARRIED),
        )

    def _next_input(self, session: AgentSession, stream: WorkflowStreamState) -> SessionInput:
        totals = self._totals
        return SessionInput(
            agent=totals.agent,
            session=session,
            options=self._options,
            runs=totals.runs,
            used_tokens=totals.used_tokens,
            turns=totals.turns,
            cost_usd=totals.cost_usd,
            stream=stream,
        )

    def _show(self) -> None:
        """Index the session's status and totals, and show them in its details."""
        status = self.status()
        shown = status.run_status or ("RUNNING" if status.status == "RUNNING" else None)
        shown = shown or ("COMPLETED" if status.status == "CLOSED" else "PENDING")
        self._index.update(
            agent=status.agent,
            session_id=self.state.session.info.id,
            status=str(shown),
            turns=status.turns,
            tokens=status.used_tokens,
            cost_usd=round(status.cost_usd, 6),
        )
        workflow.set_current_details(session_markdown(status, str(shown)))

    @workflow.signal(name="ratchet.run_progress")
    def run_progress(self, progress: RunProgress) -> None:
        """The run in progress started or stopped waiting for someone."""
        if self._runs.progress(progress):
            self._show()

    def _continue_as_new_due(self, *, any_size: bool = False) -> bool:
        if self._runs.thread_bytes > SESSION_THREAD_LIMIT and not any_size:
            return False  # too large for one payload: carry on in this run
        limit = self._options.continue_as_new_after_runs
        return workflow.info().is_continue_as_new_suggested() or (
            limit is not None and self._totals.runs_this_workflow_run >= limit
        )

    @workflow.update
    async def send(self, request: SendRequest) -> RunResult:
        """Run the agent on ``request.messages`` (after any queued before them)."""
        line = self._line
        ticket = line.tickets
        line.tickets += 1
        if self._options.steering == "interrupt" and self._runs.current is not None:
            await self._runs.stop(StopRequest(status="INTERRUPTED", reason="a newer message"))
        await workflow.wait_condition(lambda: line.serving == ticket)
        try:
            return await self._runs.execute(request.messages)
        finally:
            line.serving += 1
            self._show()

    @send.validator
    def _validate_send(self, request: SendRequest) -> None:
        if self._line.closed:
            raise ApplicationError(
                f"Session {workflow.info().workflow_id} is closed; start a new one.",
                type="SessionClosed",
            )
        try:
            new_messages(request.messages, lambda: "checked")
        except InvalidInputError as e:
            raise ApplicationError(str(e), type="InvalidInputError") from e
        self._runs.check_budget()
        if self._options.steering == "reject" and not self._line.idle:
            current = self._runs.current.label if self._runs.current is not None else None
            raise ApplicationError(
                f"Session {workflow.info().workflow_id} is running {current}; it rejects "
                "messages until that run ends (SessionOptions(steering='queue') queues them).",
                type="SessionBusy",
            )

    @workflow.update
    async def wait_run(self) -> str | None:
        """Wait until a run is in progress and return its workflow id (``None`` if the
        session closes or continues as new first)."""

        def started() -> bool:
            return self._runs.current is not None and self._runs.current.handle is not None

        await workflow.wait_condition(
            lambda: started() or self._line.closed or self._continue_as_new_due()
        )
        return self._runs.current.label if started() and self._runs.current else None

    @workflow.update
    async def cancel(self) -> SessionStatus:
        """Stop the run in progress at its next safe point (its send returns with
        status CANCELLED and the turns it finished); the session stays usable."""
        await self._runs.stop(StopRequest(status="CANCELLED", reason="cancelled"))
        return self.status()

    @workflow.update
    async def close(self) -> SessionStatus:
        """Stop taking messages; queued ones still run. The workflow then completes."""
        self._line.closed = True
        await workflow.wait_condition(lambda: self._line.idle)
        return self.status()

    @workflow.query
    def status(self) -> SessionStatus:
        line, totals, run = self._line, self._totals, self._runs.current
        running = not line.idle
        return SessionStatus(
            agent=totals.agent,
            status="CLOSED" if line.closed and not running else "RUNNING" if running else "PENDING",
            runs=totals.runs,
            waiting=max(0, line.tickets - line.serving - 1),
            current_run=run.label if run is not None else None,
            used_tokens=totals.used_tokens,
            token_budget=self._options.token_budget,
            run_status=run.status if run is not None else None,
            waiting_for=run.waiting_for if run is not None else [],
            turns=totals.turns,
            cost_usd=totals.cost_usd,
        )

    @workflow.query
    def pending(self) -> list[PendingView]:
        """What the run in progress waits for (approvals, questions), as it last said."""
        return self._runs.current.pending if self._runs.current is not None else []

    @workflow.query
    def session(self) -> AgentState:
        """Session data (between runs the execution is ``None``: status PENDING)."""
        return self.state

    @workflow.query
    def thread(self) -> ThreadData:
        return self.state.session.thread
