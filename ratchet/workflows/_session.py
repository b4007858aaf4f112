"""AgentSessionWorkflow: one long-lived workflow per user session (type ``AgentSession``).

A message sent to the session runs in the session's own workflow, turn by turn
(one activity per turn), so each message is written to history once: the user's
in the ``send`` Update that brought it, every other in the result of the turn
that made it. The thread is an append-only log: a turn's input names log
positions, never messages, and the worker reads them from its cache or pages
them in with the ``ratchet.thread`` query (see ``ratchet.agents._views``).

Continue-as-new carries no thread: the new workflow run names the previous one
for the earlier messages. A closed run answers a query only by a replay, so each
run, as it ends, writes where its messages are in its history (``log_index``)
and readers read closed runs from there. The input stays small at any session
length (queue, recent results and events, and that index only). Sub-agents still
run as child workflows. The parts: the queue of sends (``sends``), turn marks for
forks (``marks``), totals and what the UI shows (``session_view``).
"""

from __future__ import annotations

import contextlib
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from temporalio.contrib.workflow_streams import WorkflowStream

    from ratchet.errors import UsageError
    from ratchet.types import AgentRecord, AgentSession, ExecutionRecord, ThreadData
    from ratchet.wire import (
        CHECKPOINT_QUERY,
        MOVE_SIGNAL,
        REANCHOR_UPDATE,
        SESSION_WORKFLOW,
        Anchored,
        CheckpointAnswer,
        CheckpointRequest,
        LogInfo,
        RunRecord,
        SendOutcome,
        SendRequest,
        SessionInput,
        SessionStatus,
        StopRequest,
    )

    from ._anchoring import Anchoring
    from ._decisions import AgentHandlers
    from ._ledger import ExecutionChange
    from ._log_index import LogIndexer
    from ._marks import TurnMarks, turn_mark
    from ._observe import EventStream, Index, RunObserver
    from ._patches import CLOSE_SHOWN_AT_ONCE
    from ._runner import AgentRunner, RunHooks
    from ._sandbox import SANDBOXED
    from ._sends import MAX_HELD, SendBook
    from ._session_runs import QUEUE_BYTES_CARRIED, SessionRuns
    from ._session_view import SessionDisplay, SessionTotals
    from ._thread_query import log_info


STOP_WAIT = timedelta(seconds=10)
"""Longest a ``stop`` Update waits for the run to end before it answers (a durable
tool already running finishes first)."""


@workflow.defn(name=SESSION_WORKFLOW, failure_exception_types=[UsageError], sandboxed=SANDBOXED)
class AgentSessionWorkflow(AgentHandlers):
    """A conversation that lives for ever; each message sent runs one execution."""

    @workflow.init
    def __init__(self, input: SessionInput) -> None:
        session = input.session or AgentSession.new(
            input.agent,
            workflow.now(),
            session_id=input.session_id or workflow.info().workflow_id,
            thread_id=f"thread-{workflow.uuid4().hex[:12]}",
            thread_kind=input.options.run.thread_kind,
        )
        self._options = input.options
        self._totals = SessionTotals.carried(input)
        self._sends = SendBook.handed_over(input)
        self._display = SessionDisplay()
        log = session.thread.kind == "messages"  # a service's thread is not indexed
        index = LogIndexer(session.thread.offset) if log else None
        if index is not None:
            index.held(session.thread.messages)  # the thread this run started with
        self._events = EventStream(WorkflowStream(input.stream), texts_by_reference=log)
        observer = RunObserver(
            self._events,
            Index(enabled=False),  # the session indexes its own totals
            session_id=session.info.id,
            in_session=True,
        )
        self._runner = AgentRunner(
            input.agent,
            session=session,
            options=input.options.run,
            hooks=RunHooks(
                observers=[observer, self._progress, lambda change: self._marks(change)],
                state_hooks=[observer.state_changed],
                details=self._run_details,
                live_events=True,
                run_label=lambda: observer.run_id,
                log_index=index,
                settled=[observer.settled],
            ),
        )
        if index is not None:
            index.appended(self.state.session.thread.messages)
        self._runs = SessionRuns(
            self._runner,
            self._options,
            totals=self._totals,
            sends=self._sends,
            observer=observer,
            display=self._display,
            show=self._show,
            anchoring=Anchoring(
                lambda: self.state, input.options.horizon, input.depends_since, input.log_bytes
            ),
        )
        self._marks = TurnMarks(
            turn_mark(input.turns, self.state.session, input.agent),
            lambda: self.state.session,
            lambda: self._totals.turns,
        )
        """This workflow run's turns (the first: where it started), for forks."""

    @property
    def state(self) -> AgentRecord:
        return self._runner.state

    @workflow.run
    async def run(self, input: SessionInput) -> SessionStatus:
        input.options.check()  # a bad value fails the session (UsageError), never wedges it
        self._show()
        self._runs.anchoring.start()
        sends = self._sends
        while True:
            await workflow.wait_condition(
                lambda: (
                    bool(sends.queued)
                    or sends.closed
                    or self._runs.continue_as_new_due()
                    or self._runs.target_changed()
                )
            )
            moving = self._runs.build_changed()
            if (moving or self._runs.continue_as_new_due()) and (
                sends.queued_bytes <= QUEUE_BYTES_CARRIED
            ):
                await self._runs.continue_as_new(self._record, upgrade=moving)
            item = sends.next()
            if item is not None:
                await self._runs.execute(item)
                continue
            sends.closed = True
            self._show()
            self._events.stream.detach_pollers()
            await workflow.wait_condition(workflow.all_handlers_finished)
            ending = {"log": self._runs.log_index(), "record": self._record()}
            return self.status().model_copy(update=ending)

    def _record(self) -> RunRecord:
        """Turn marks and events index for readers of the closed run (``wire._run_record``)."""
        thread, events = self.state.session.thread, self._events.index()
        return self._marks.record(thread).model_copy(update={"events": events})

    @workflow.signal(name=MOVE_SIGNAL)
    def _move(self) -> None:
        """Wakes an idle session to move to a new current build now (``deploy promote``)."""

    @workflow.update(name=REANCHOR_UPDATE)
    async def _reanchor(self) -> Anchored:
        """Re-anchor now (``ratchet sessions anchor``; a run of 0.1.0 has no timer)."""
        return await self._runs.anchoring.asked()

    def _progress(self, change: ExecutionChange) -> None:
        if getattr(change.old, "status", None) != change.new.status:
            self._show()

    def _run_details(self, text: str) -> None:
        self._display.run_progress = text
        self._show()

    def _show(self) -> None:
        self._display.show(self.status(), self.state.session.info.id, idle=self._sends.idle)

    @workflow.update
    async def send(self, request: SendRequest) -> SendOutcome:
        """Queue ``request.messages``; wait for their run's result if few sends are
        waiting already, else return the ticket to poll with ``send_result``. A
        request id taken already answers for the message it brought."""
        sends = self._sends
        self._totals.updates_this_workflow_run += 1
        ticket, new = sends.add(request)
        if new and self._options.steering == "interrupt" and sends.running is not None:
            self._runner.stop(StopRequest(status="INTERRUPTED", reason="a newer message"))
        self._show()
        if sends.held >= MAX_HELD or sends.ending:
            return sends.result(ticket)
        sends.held += 1
        try:
            await workflow.wait_condition(lambda: sends.done(ticket) or sends.ending)
        finally:
            sends.held -= 1
        outcome = sends.result(ticket)
        if outcome.state == "failed":
            raise ApplicationError(
                outcome.error or "failed", type=outcome.error_type, non_retryable=True
            )
        return outcome

    @send.validator
    def _validate_send(self, request: SendRequest) -> None:
        self._sends.check(request, self._options, self._totals.used_tokens)

    @workflow.query
    def send_result(self, ticket: int) -> SendOutcome:
        """Where the message sent with ``ticket`` is (its result once its run ended)."""
        return self._sends.result(ticket)

    @workflow.query
    def send_results(self, tickets: list[int]) -> list[SendOutcome]:
        """``send_result`` for many tickets at once (one client polls for all its sends)."""
        return [self._sends.result(t) for t in tickets]

    @workflow.update
    async def stop(self) -> SessionStatus:
        """Stop the run in progress at its next safe point (its send returns with
        status CANCELLED and the turns it finished); the session stays usable. Answers
        once that run has ended, with the session's status then, or after
        ``STOP_WAIT`` if a durable tool is still finishing (the run ends after it)."""
        self._totals.updates_this_workflow_run += 1
        running = self._sends.running
        if running is not None:
            self._runner.stop(StopRequest(status="CANCELLED", reason="cancelled"))
            with contextlib.suppress(TimeoutError):
                ended = lambda: self._sends.running is not running  # noqa: E731
                await workflow.wait_condition(ended, timeout=STOP_WAIT)
        return self.status()

    @workflow.update
    async def close(self) -> SessionStatus:
        """Stop taking messages; queued ones still run. The workflow then completes."""
        sends = self._sends
        self._totals.updates_this_workflow_run += 1
        sends.closed = True
        if workflow.patched(CLOSE_SHOWN_AT_ONCE):  # index it here, whatever the job order
            self._show()
        await workflow.wait_condition(lambda: sends.idle or sends.ending)
        return self.status()

    def _decision_received(self) -> None:
        self._totals.updates_this_workflow_run += 1

    def _rules_changed(self) -> None:
        self._show()

    def _waiting(self) -> bool:
        return self._sends.running is not None

    def _check_can_decide(self, request_id: str) -> None:
        if not self._waiting():
            raise ApplicationError(
                f"Session {workflow.info().workflow_id} has no run in progress, so nothing "
                f"waits for {request_id}.",
                type="DecisionError",
            )

    @workflow.query
    def status(self) -> SessionStatus:
        sends, totals, execution = self._sends, self._totals, self.state.execution
        running = not sends.idle
        closed = sends.closed and not running
        return SessionStatus(
            agent=totals.agent,
            status="CLOSED" if closed else "RUNNING" if running else "PENDING",
            runs=totals.runs,
            waiting=sends.queued,
            current_run=sends.running.label if sends.running is not None else None,
            used_tokens=totals.used_tokens,
            token_budget=self._options.token_budget,
            run_status=execution.status if execution is not None else None,
            waiting_for=self._runner.waiting,
            turns=totals.turns,
            run_turns=execution.step_count if running and execution is not None else 0,
            run_tokens=execution.usage.total_tokens if running and execution is not None else 0,
            cost_usd=totals.cost_usd,
            approval_rules=self.state.session.approvals.lines(),
            retention_warning=self._runs.anchoring.problem,
        )

    @workflow.query
    def execution(self) -> ExecutionRecord | None:
        """The run in progress, else the last one this workflow run finished."""
        return self.state.execution or self._totals.last_execution

    @workflow.query
    def log_info(self) -> LogInfo:
        """Where the thread is (id, length, view, cursor), without its messages: read
        them with the ``ratchet.thread`` page query."""
        return log_info(self.state.session.thread)

    @workflow.query
    def thread(self) -> ThreadData:
        """This workflow run's part of the thread (``base`` names the rest)."""
        return self.state.session.thread

    @workflow.query(name=CHECKPOINT_QUERY)
    def checkpoint(self, request: CheckpointRequest) -> CheckpointAnswer:
        """The mark after a turn, for a fork (see ``marks.TurnMarks.answer``)."""
        return self._marks.answer(request, self.state.session.thread, self._options)
