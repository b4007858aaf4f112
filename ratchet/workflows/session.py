"""AgentSessionWorkflow: one long-lived workflow per user session (type ``AgentSession``).

A message sent to the session runs in the session's own workflow, turn by turn
(one activity per turn), so each message is written to history once: the user's
in the ``send`` Update that brought it, every other in the result of the turn
that made it. The thread is an append-only log: a turn's input names log
positions, never messages, and the worker reads them from its cache or pages
them in with the ``ratchet.thread`` query (see ``ratchet.agents.views``).

Continue-as-new carries no thread: the new workflow run names the previous one
for the earlier messages, and a closed run still answers the query. The input
stays small at any session length (queue, recent results and recent events
only). Sub-agents still run as child workflows.

Sends do not hold Updates open for long: the first ``MAX_HELD`` wait for their
result, the others get a ticket at once and the client polls ``send_result``
(a query, nothing written to history).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from temporalio.contrib.workflow_streams import WorkflowStream

    from ratchet.agents import views
    from ratchet.agents.events import RunEvent
    from ratchet.agents.messages import Message, approximate_size
    from ratchet.agents.pending import Decision, PendingView
    from ratchet.agents.state import (
        AgentSession,
        AgentState,
        AgentStatus,
        ExecutionState,
        ThreadData,
    )
    from ratchet.errors import BudgetExceededError, InvalidInputError, UsageError
    from ratchet.wire.names import CHECKPOINT_QUERY, SESSION_WORKFLOW
    from ratchet.wire.runs import DecisionRequest, StopRequest, new_messages
    from ratchet.wire.sessions import (
        CheckpointAnswer,
        CheckpointRequest,
        LogInfo,
        Queued,
        SendOutcome,
        SendRequest,
        SessionInput,
        SessionStatus,
        TurnMark,
    )

    from .observe import EventStream, Index, RunObserver, excerpt
    from .runner import AgentRunner

MAX_HELD = 2
"""Sends that wait for their result in the Update; the rest return a ticket at once
(Temporal admits 10 Updates in flight per workflow)."""
MAX_QUEUED = 1000
"""Messages a session queues behind the one running; more are refused (SessionBusy)."""
RESULTS_KEPT = 500
RESULTS_CARRIED = 50
"""Results of finished sends a client can still ask for by ticket (after a
continue-as-new, the latest ones)."""
EVENTS_CARRIED = 500
EVENT_BYTES_CARRIED = 24 * 1024
QUEUE_BYTES_CARRIED = 24 * 1024
"""A continue-as-new waits for the queue to drain below this many bytes."""
HISTORY_EVENTS = 8000
HISTORY_BYTES = 8 * 1024 * 1024
UPDATES_PER_RUN = 1500
"""A workflow run continues as new past any of these (Temporal warns at 10,240
events and 10 MB, ends runs at 51,200 events and 50 MB, and admits 2,000 Updates
per run)."""


@workflow.defn(name=SESSION_WORKFLOW, failure_exception_types=[UsageError])
class AgentSessionWorkflow:
    """A conversation that lives for ever; each message sent runs one execution."""

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
        self._options = input.options
        self._runner = AgentRunner(
            input.agent, session=session, options=input.options.run, log=True
        )
        self._runner.live_events = True
        self._runner.details_hook = self._run_details
        self._run_progress = ""
        self._events = EventStream(WorkflowStream(input.stream))
        self._index = Index()
        self._observer = RunObserver(
            self._runner,
            self._events,
            Index(enabled=False),  # the session indexes its own totals
            session_id=session.info.id,
            report_to=None,
        )
        self._observer.in_session = True
        self._runner.observers.append(self._observer)
        self._runner.observers.append(self._progress)
        self._runner.state_hooks.append(self._observer.state_changed)
        self._runner.observers.append(self._mark)
        self._marks: list[TurnMark] = [self._new_mark(input.turns)]
        """This workflow run's turns (the first: where it started), for forks."""
        self._runs = input.runs
        self._runs_this_workflow_run = 0
        self._used = input.used_tokens
        self._turns = input.turns
        self._cost = input.cost_usd
        self._tickets = input.tickets
        self._queue: deque[Queued] = deque(input.queue)
        self._queued_bytes = sum(_size(q) for q in self._queue)
        self._results: dict[int, SendOutcome] = {r.ticket: r for r in input.results}
        self._current: Queued | None = None
        self._current_run: str | None = None
        self._last_execution: ExecutionState | None = None
        self._held = 0
        self._updates = 0
        self._closed = False
        self._ending = False

    @property
    def state(self) -> AgentState:
        return self._runner.state

    @workflow.run
    async def run(self, input: SessionInput) -> SessionStatus:
        input.options.check()  # a bad value fails the session (UsageError), never wedges it
        self._show()
        while True:
            await workflow.wait_condition(
                lambda: bool(self._queue) or self._closed or self._continue_as_new_due()
            )
            if self._continue_as_new_due() and self._queued_bytes <= QUEUE_BYTES_CARRIED:
                await self._continue_as_new()
            if self._queue:
                item = self._queue.popleft()
                self._queued_bytes -= _size(item)
                await self._execute(item)
                continue
            self._closed = True
            self._show()
            self._events.stream.detach_pollers()
            await workflow.wait_condition(workflow.all_handlers_finished)
            return self.status()

    def _continue_as_new_due(self) -> bool:
        info = workflow.info()
        limit = self._options.continue_as_new_after_runs
        return (
            info.is_continue_as_new_suggested()
            or info.get_current_history_length() > HISTORY_EVENTS
            or info.get_current_history_size() > HISTORY_BYTES
            or self._updates >= UPDATES_PER_RUN
            or (limit is not None and self._runs_this_workflow_run >= limit)
        )

    async def _continue_as_new(self) -> None:
        """A fresh workflow run: the thread stays here by reference; the input holds
        the queue, the latest results and events, and the totals."""
        self._ending = True  # held sends return their ticket; the client polls the new run
        self._events.stream.detach_pollers()
        await workflow.wait_condition(workflow.all_handlers_finished)
        info = workflow.info()
        session = self.state.session
        carried = session.thread.continued(info.workflow_id, info.run_id)
        results = sorted(self._results.values(), key=lambda r: r.ticket)[-RESULTS_CARRIED:]
        workflow.continue_as_new(
            SessionInput(
                agent=self.agent,
                session=session.model_copy(update={"thread": carried}),
                options=self._options,
                runs=self._runs,
                session_id=session.info.id,
                used_tokens=self._used,
                turns=self._turns,
                cost_usd=self._cost,
                stream=self._events.carried(
                    max_events=EVENTS_CARRIED, max_bytes=EVENT_BYTES_CARRIED
                ),
                tickets=self._tickets,
                queue=list(self._queue),
                results=results,
            )
        )

    async def _execute(self, item: Queued) -> None:
        runner = self._runner
        session = self.state.session
        thread = session.thread
        mark, view, cursor, state = thread.length, thread.view, thread.cursor, session.state
        self._runs += 1
        self._runs_this_workflow_run += 1
        label = f"{session.info.id}-run-{self._runs}"
        budget = self._options.token_budget
        if budget is not None and self._used >= budget:
            error = BudgetExceededError(self._used, budget, scope="session")
            self._settle(
                SendOutcome(
                    ticket=item.ticket,
                    state="failed",
                    error=str(error),
                    error_type="BudgetExceededError",
                )
            )
            return
        options = self._options.run
        if self._options.compaction is not None:
            options = options.model_copy(update={"compaction": self._options.compaction})
        if budget is not None:
            options = options.model_copy(update={"token_budget": budget - self._used})
        runner.reset()
        runner.options = options
        runner.agent = self.agent
        self._observer.run_id = label
        self._current, self._current_run = item, label
        self._run_progress = ""
        self._show()
        try:
            result = await runner.run(item.messages)
        except Exception as e:
            # The run's own failure says where (which turn, tool or state key) and what.
            cause = first_application_error(e)
            text = getattr(cause, "message", None) or str(cause)
            kind = getattr(cause, "type", None) or type(cause).__name__
            self._rollback(mark, view, cursor, state)
            self._finished(label, AgentStatus.FAILED, text)
            message = f"Run {label} of session {workflow.info().workflow_id} failed: {text}"
            if kind == "BudgetExceededError" and budget is not None:
                self._used = budget
                message = f"The session has spent its token_budget of {budget}. {message}"
            self._settle(
                SendOutcome(ticket=item.ticket, state="failed", error=message, error_type=kind)
            )
            return
        finally:
            self._current, self._current_run = None, None
            self._last_execution = self.state.execution
            self.state.execution = None
        self._used += result.usage.total_tokens
        self._turns += result.turns
        self._cost += result.usage.cost_usd
        self.agent = result.agent  # a handoff moves the session to another agent
        final_at = self._position(result.final_response)
        self._finished(label, result.status, result.output)
        self._settle(
            SendOutcome(
                ticket=item.ticket,
                state="done",
                result=result.model_copy(
                    update={"final_response": None, "messages": [], "state": {}, "thread": None}
                ),
                final_at=final_at,
            )
        )

    def _new_mark(self, turn: int, added: Sequence[str] = ()) -> TurnMark:
        session = self.state.session
        thread = session.thread
        ids = set(added)
        fresh = [m for m in thread.messages[-len(ids) :] if m.id in ids] if ids else []
        answered = {m.tool_call_id for m in fresh if m.role == "tool"}
        return TurnMark(
            turn=turn,
            length=thread.length,
            last_id=thread.last_id,
            view=thread.view,
            cursor=thread.cursor,
            agent=self._runner.agent,
            state=session.state,
            open_calls=[c for m in fresh for c in m.tool_calls if c.id not in answered],
        )

    def _mark(self, old: ExecutionState | None, new: ExecutionState) -> None:
        if old is not None and new.step_count > old.step_count:
            step = new.step_results[-1]
            self._marks.append(self._new_mark(self._turns + new.step_count, step.message_ids))

    @workflow.query(name=CHECKPOINT_QUERY)
    def checkpoint(self, request: CheckpointRequest) -> CheckpointAnswer:
        """The mark after turn ``request.turn`` (or after the turn that added message
        ``request.message``; neither: the latest), or which earlier run to ask."""
        thread = self.state.session.thread
        answer = CheckpointAnswer(
            run_id=workflow.info().run_id,
            thread_id=thread.id,
            kind=thread.kind,
            turns=self._marks[-1].turn,
            options=self._options,
        )
        marks = self._marks
        if request.message is not None:
            where = next(
                (
                    thread.offset + i
                    for i, m in enumerate(thread.messages)
                    if m.id == request.message
                ),
                None,
            )
            if where is None:
                return answer.model_copy(update={"earlier": thread.base})
            found = next((m for m in marks if m.length > where), None)
            return answer.model_copy(update={"mark": self._settled(found)})
        if request.turn is None:
            return answer.model_copy(update={"mark": self._settled(marks[-1])})
        if request.turn < marks[0].turn:
            return answer.model_copy(update={"earlier": thread.base})
        found = next((m for m in marks if m.turn == request.turn), None)
        return answer.model_copy(update={"mark": self._settled(found)})

    def _settled(self, mark: TurnMark | None) -> TurnMark | None:
        """The mark with the results settled for its open tool calls (approvals,
        durable tools), which the log holds right after it, when it has them."""
        if mark is None or not mark.open_calls:
            return mark
        thread = self.state.session.thread
        offset = thread.offset
        open_ids = {c.id for c in mark.open_calls}
        position, last_id = mark.length, mark.last_id
        while 0 <= position - offset < len(thread.messages):
            message = thread.messages[position - offset]
            if message.role != "tool" or message.tool_call_id not in open_ids:
                break
            open_ids.discard(message.tool_call_id)
            position, last_id = position + 1, message.id
        calls = [c for c in mark.open_calls if c.id in open_ids]
        return mark.model_copy(update={"length": position, "last_id": last_id, "open_calls": calls})

    def _rollback(self, mark: int, view: list | None, cursor: str | None, state: dict) -> None:
        """A failed run leaves the session as it was: its messages stay in the log
        (and in history) but leave the agent's view; state and cursor go back."""
        session = self.state.session
        thread = session.thread
        update: dict = {"cursor": cursor}
        if view is not None:
            update["view"] = views.without(view, mark, thread.length)
        else:  # a service-backed thread: the run's messages were never referenced
            update["messages"] = thread.messages[: mark - thread.offset]
        self.state.session = session.model_copy(
            update={"thread": thread.model_copy(update=update), "state": state}
        )

    def _position(self, message: Message | None) -> int | None:
        if message is None:
            return None
        thread = self.state.session.thread
        for index in range(len(thread.messages) - 1, -1, -1):
            if thread.messages[index].id == message.id:
                return thread.offset + index
        return None

    def _settle(self, outcome: SendOutcome) -> None:
        self._results[outcome.ticket] = outcome
        while len(self._results) > RESULTS_KEPT:
            self._results.pop(next(iter(self._results)))
        self._show()

    def _finished(self, run: str, status: AgentStatus, text: str) -> None:
        self._events.publish(
            RunEvent(
                kind="run_finished",
                run_id=run,
                agent=self.agent,
                text=excerpt(text, 4000),
                data={"status": status.value},
            )
        )

    def _progress(self, old: object, new: object) -> None:
        if getattr(old, "status", None) != getattr(new, "status", None):
            self._show()

    def _show(self) -> None:
        """Index the session's status and totals, and show them in its details.

        The index says whether the session waits for someone (``AWAITING_*``), is
        closed (``COMPLETED``) or neither (``PENDING``): a busy session does not flip
        its attribute on every message; its details say whether a run is in progress.
        """
        status = self.status()
        shown = status.run_status or ("RUNNING" if status.status == "RUNNING" else None)
        shown = shown or ("COMPLETED" if status.status == "CLOSED" else "PENDING")
        waiting = status.run_status in (AgentStatus.AWAITING_APPROVAL, AgentStatus.AWAITING_INPUT)
        indexed = shown if waiting else "COMPLETED" if status.status == "CLOSED" else "PENDING"
        self._index.update(
            agent=self.agent,
            session_id=self.state.session.info.id,
            status=str(indexed),
            flush=self._idle(),  # at rest: counters now; while busy, with the batch
            turns=self._turns,
            tokens=self._used,
            cost_usd=round(self._cost, 6),
        )
        if self._current is not None and self._run_progress:
            # The run's own table says what it waits for.
            header = session_markdown(status.model_copy(update={"waiting_for": []}), str(shown))
            workflow.set_current_details(f"{header}\n\n{self._run_progress}")
        else:
            workflow.set_current_details(session_markdown(status, str(shown)))

    def _run_details(self, text: str) -> None:
        """The run in progress's own details (its turns), shown under the session's."""
        self._run_progress = text
        self._show()

    def _idle(self) -> bool:
        return self._current is None and not self._queue

    @workflow.update
    async def send(self, request: SendRequest) -> SendOutcome:
        """Queue ``request.messages``; wait for their run's result if few sends are
        waiting already, else return the ticket to poll with ``send_result``."""
        self._updates += 1
        ticket = self._tickets
        self._tickets += 1
        item = Queued(ticket=ticket, messages=request.messages)
        self._queue.append(item)
        self._queued_bytes += _size(item)
        if self._options.steering == "interrupt" and self._current is not None:
            self._runner.stop(StopRequest(status="INTERRUPTED", reason="a newer message"))
        self._show()
        if self._held >= MAX_HELD or self._ending:
            return self.send_result(ticket)
        self._held += 1
        try:
            await workflow.wait_condition(lambda: ticket in self._results or self._ending)
        finally:
            self._held -= 1
        outcome = self.send_result(ticket)
        if outcome.state == "failed":
            raise ApplicationError(
                outcome.error or "failed", type=outcome.error_type, non_retryable=True
            )
        return outcome

    @send.validator
    def _validate_send(self, request: SendRequest) -> None:
        if self._closed:
            raise ApplicationError(
                f"Session {workflow.info().workflow_id} is closed; start a new one.",
                type="SessionClosedError",
            )
        try:
            new_messages(request.messages, lambda: "checked")
        except InvalidInputError as e:
            raise ApplicationError(str(e), type="InvalidInputError") from e
        budget = self._options.token_budget
        if budget is not None and self._used >= budget:
            raise ApplicationError(
                str(BudgetExceededError(self._used, budget, scope="session")),
                type="BudgetExceededError",
            )
        if self._options.steering == "reject" and not self._idle():
            raise ApplicationError(
                f"Session {workflow.info().workflow_id} is running {self._current_run}; it "
                "rejects messages until that run ends (SessionOptions(steering='queue') "
                "queues them).",
                type="SessionBusyError",
            )
        if len(self._queue) >= MAX_QUEUED:
            raise ApplicationError(
                f"Session {workflow.info().workflow_id} has {len(self._queue)} messages queued, "
                f"its limit; send again once some have run (status().waiting says how many).",
                type="SessionBusyError",
            )

    @workflow.query
    def send_result(self, ticket: int) -> SendOutcome:
        """Where the message sent with ``ticket`` is (its result once its run ended)."""
        if ticket in self._results:
            return self._results[ticket]
        if self._current is not None and self._current.ticket == ticket:
            return SendOutcome(ticket=ticket, state="running")
        if any(q.ticket == ticket for q in self._queue):
            return SendOutcome(ticket=ticket, state="queued")
        return SendOutcome(ticket=ticket, state="unknown")

    @workflow.query
    def send_results(self, tickets: list[int]) -> list[SendOutcome]:
        """``send_result`` for many tickets at once (one client polls for all its sends)."""
        return [self.send_result(t) for t in tickets]

    @workflow.update
    def cancel(self) -> SessionStatus:
        """Stop the run in progress at its next safe point (its send returns with
        status CANCELLED and the turns it finished); the session stays usable."""
        self._updates += 1
        if self._current is not None:
            self._runner.stop(StopRequest(status="CANCELLED", reason="cancelled"))
        return self.status()

    @workflow.update
    async def close(self) -> SessionStatus:
        """Stop taking messages; queued ones still run. The workflow then completes."""
        self._updates += 1
        self._closed = True
        await workflow.wait_condition(lambda: self._idle() or self._ending)
        return self.status()

    @workflow.update
    def approve(self, request: DecisionRequest) -> Decision:
        """Approve a pending tool call of the run in progress."""
        self._updates += 1
        return self._runner.pending.decide(request, "approve")

    @approve.validator
    def _validate_approve(self, request: DecisionRequest) -> None:
        self._check_decision(request)
        self._runner.pending.validate(request, "approve")

    @workflow.update
    def reject(self, request: DecisionRequest) -> Decision:
        """Reject a pending tool call; the model is told, with ``reason``."""
        self._updates += 1
        return self._runner.pending.decide(request, "reject")

    @reject.validator
    def _validate_reject(self, request: DecisionRequest) -> None:
        self._check_decision(request)
        self._runner.pending.validate(request, "reject")

    @workflow.update
    def provide_input(self, request: DecisionRequest) -> Decision:
        """Answer a question the agent asked."""
        self._updates += 1
        return self._runner.pending.decide(request, "answer")

    @provide_input.validator
    def _validate_provide_input(self, request: DecisionRequest) -> None:
        self._check_decision(request)
        self._runner.pending.validate(request, "answer")

    def _check_decision(self, request: DecisionRequest) -> None:
        if self._current is None:
            raise ApplicationError(
                f"Session {workflow.info().workflow_id} has no run in progress, so nothing "
                f"waits for {request.id}.",
                type="DecisionError",
            )

    @workflow.query
    def status(self) -> SessionStatus:
        running = not self._idle()
        execution = self.state.execution
        return SessionStatus(
            agent=self.agent,
            status="CLOSED"
            if self._closed and not running
            else "RUNNING"
            if running
            else "PENDING",
            runs=self._runs,
            waiting=len(self._queue),
            current_run=self._current_run,
            used_tokens=self._used,
            token_budget=self._options.token_budget,
            run_status=execution.status if execution is not None else None,
            waiting_for=self._runner.waiting,
            turns=self._turns,
            cost_usd=self._cost,
        )

    @workflow.query
    def execution(self) -> ExecutionState | None:
        """The run in progress, else the last one this workflow run finished."""
        return self.state.execution or self._last_execution

    @workflow.query
    def pending(self) -> list[PendingView]:
        """What the run in progress waits for (approvals, questions)."""
        return self._runner.pending.view() if self._current is not None else []

    @workflow.query
    def session(self) -> AgentState:
        """Session data (between runs the execution is ``None``: status PENDING). The
        thread holds this workflow run's messages; earlier ones are named by its base."""
        return self.state

    @workflow.query
    def log_info(self) -> LogInfo:
        """Where the thread is (id, length, view, cursor), without its messages: read
        them with the ``ratchet.thread`` page query."""
        thread = self.state.session.thread
        return LogInfo(
            thread_id=thread.id,
            length=thread.length,
            kind=thread.kind,
            cursor=thread.cursor,
            view=thread.view,
        )

    @workflow.query
    def thread(self) -> ThreadData:
        """This workflow run's part of the thread (``base`` names the rest)."""
        return self.state.session.thread


def _size(item: Queued) -> int:
    return sum(approximate_size(m) for m in item.messages) + 16


def first_application_error(error: BaseException) -> BaseException:
    """The outermost ApplicationError in ``error``'s chain of causes (the one with
    the most context), else the deepest cause."""
    while not isinstance(error, ApplicationError) and error.__cause__ is not None:
        error = error.__cause__
    return error


def root_cause(error: BaseException) -> BaseException:
    while error.__cause__ is not None:
        error = error.__cause__
    return error


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
    if status.waiting_for:
        lines += ["", f"**Waiting for** ({shown}):"]
        lines += [f"- {w}" for w in status.waiting_for]
    return "\n".join(lines)
