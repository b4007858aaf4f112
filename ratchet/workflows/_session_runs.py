"""A session's runs: one queued message run to its outcome in the session's
workflow, the session's totals updated, a failed run taken back."""

from __future__ import annotations

from collections.abc import Callable

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ratchet.errors import BudgetExceededError
    from ratchet.types import (
        AgentStatus,
        Message,
        RunFinished,
        RunFinishedData,
        Usage,
        approximate_size,
        excerpt,
    )
    from ratchet.wire import (
        LogIndex,
        Queued,
        RunRecord,
        RunResult,
        SendOutcome,
        SessionInput,
        SessionOptions,
        session_run_id,
    )

    from ._anchoring import Anchoring
    from ._failures import first_application_error
    from ._log_index import INDEX_BYTES_CARRIED
    from ._observe import RunObserver
    from ._patches import FAILED_RUNS_SPEND, MOVE_TO_NEW_BUILD, patched
    from ._runner import AgentRunner
    from ._sends import SendBook
    from ._session_view import SessionDisplay, SessionTotals, position, rolled_back
    from ._thread_query import log_info


EVENTS_CARRIED = 500
FINISHED_TEXT = 4000
"""A ``run_finished`` event's text: its answer's first characters."""
EVENT_BYTES_CARRIED = 24 * 1024
QUEUE_BYTES_CARRIED = 24 * 1024
"""A continue-as-new waits for the queue to drain below this many bytes."""
ANSWER_INLINE = 2 * 1024
"""Bytes (about) of an answer that goes in its send's Update result, sparing the
client a query (a billed action) to read it back from the thread. Its bytes are in
history twice: at Temporal Cloud's prices 2 KiB of open history costs an action's
price in about 24 days (docs/capacity.md)."""
HISTORY_EVENTS = 8000
HISTORY_BYTES = 8 * 1024 * 1024
UPDATES_PER_RUN = 1500
"""A workflow run continues as new past any of these (Temporal warns at 10,240
events and 10 MB, ends runs at 51,200 events and 50 MB, and admits 2,000 Updates
per run)."""


class SessionRuns:
    """Runs the session's queued messages, one at a time, with its runner."""

    def __init__(
        self,
        runner: AgentRunner,
        options: SessionOptions,
        *,
        totals: SessionTotals,
        sends: SendBook,
        observer: RunObserver,
        display: SessionDisplay,
        show: Callable[[], None],
        anchoring: Anchoring,
    ) -> None:
        self._runner = runner
        self._options = options
        self._totals = totals
        self._sends = sends
        self._observer = observer
        self._display = display
        self._show = show
        self.anchoring = anchoring
        """How old what the thread relies on is, and its re-anchoring."""

    async def execute(self, item: Queued) -> None:
        """Run ``item``; its outcome goes to the send book, whatever happens."""
        totals, session = self._totals, self._runner.state.session
        before = (session.thread.length, session.thread.view, session.thread.cursor, session.state)
        totals.runs += 1
        totals.runs_this_workflow_run += 1
        label = session_run_id(session.info.id, totals.runs)
        budget = self._options.token_budget
        if budget is not None and totals.used_tokens >= budget:
            error = BudgetExceededError(totals.used_tokens, budget, scope="session")
            outcome = SendOutcome(
                ticket=item.ticket,
                state="failed",
                error=str(error),
                error_type="BudgetExceededError",
            )
            return self._settle(outcome)
        options = self._options.run
        if self._options.compaction is not None:
            options = options.model_copy(update={"compaction": self._options.compaction})
        if budget is not None:
            options = options.model_copy(update={"token_budget": budget - totals.used_tokens})
        if item.client_tools:  # the send's own, for its run
            options = options.model_copy(update={"client_tools": item.client_tools})
        self._runner.reset(agent=totals.agent, options=options)
        if (index := self._runner.log_index) is not None:
            index.held(item.messages)  # as its send (or this run's input) holds them
        self._observer.run_id, self._observer.request_id = label, item.request_id
        self._sends.start(item, label)
        self._display.run_progress = ""
        self._show()
        try:
            result = await self._runner.run(item.messages)
        except Exception as e:
            self._runner.state.session = rolled_back(self._runner.state.session, *before)
            return self._settle(self._failed(item, label, e))
        finally:
            self._sends.running = None
            totals.last_execution = self._runner.state.execution
            self._runner.state.execution = None
        self._succeeded(item, label, result)

    def _failed(self, item: Queued, label: str, error: Exception) -> SendOutcome:
        # The run's own failure says where (which turn, tool or state key) and what.
        cause = first_application_error(error)
        text = getattr(cause, "message", None) or str(cause)
        kind = getattr(cause, "type", None) or type(cause).__name__
        self._finished(label, AgentStatus.FAILED, text)
        message = f"Run {label} of session {workflow.info().workflow_id} failed: {text}"
        budget = self._options.token_budget
        spent = self._runner.state.execution
        usage = spent.usage if spent is not None else Usage()
        # What its finished turns spent is spent (asked only where they spent something).
        if (usage.total_tokens or usage.cost_usd) and patched(FAILED_RUNS_SPEND):
            self._totals.used_tokens += usage.total_tokens
            self._totals.cost_usd += usage.cost_usd
        if kind == "BudgetExceededError" and budget is not None:
            self._totals.used_tokens = budget
            message = f"The session has spent its token_budget of {budget}. {message}"
        return SendOutcome(ticket=item.ticket, state="failed", error=message, error_type=kind)

    def _succeeded(self, item: Queued, label: str, result: RunResult) -> None:
        totals = self._totals
        totals.used_tokens += result.usage.total_tokens
        totals.turns += result.turns
        totals.cost_usd += result.usage.cost_usd
        totals.agent = result.agent  # a handoff moves the session to another agent
        final_at = position(self._runner.state.session.thread, result.final_response)
        self._finished(label, result.status, result.output, result.final_response)
        # What the client knows or reads anyway stays out of history: the session's id,
        # the thread's end, and an answer over ANSWER_INLINE bytes (the client reads it
        # from the thread at final_at: a query, a billed action). A small one goes
        # in the Update's result (its bytes land in history twice; no command changes).
        answer = result.final_response
        if answer is not None and approximate_size(answer) > ANSWER_INLINE:
            answer = None
        short = {"final_response": answer, "thread": None, "session_id": None, "thread_end": None}
        self._settle(
            SendOutcome(
                ticket=item.ticket,
                state="done",
                result=result.model_copy(update=short),
                final_at=final_at,
            )
        )

    def _settle(self, outcome: SendOutcome) -> None:
        self._sends.settle(outcome)
        self._show()

    def _finished(
        self, run: str, status: AgentStatus, text: str, final: Message | None = None
    ) -> None:
        self._observer.events.publish(
            RunFinished(
                run_id=run,
                agent=self._totals.agent,
                text=excerpt(text, FINISHED_TEXT),
                data=RunFinishedData(status=status),
            ),
            text_of=final,
            limit=FINISHED_TEXT,
        )

    def continue_as_new_due(self) -> bool:
        info, index = workflow.info(), self._runner.log_index
        limit = self._options.continue_as_new_after_runs
        # A run that re-anchored holds the copy: it is not counted against the run
        # (continued, a new run would rely on this one and copy it all again).
        copied = self.anchoring.log_bytes if self.anchoring.copies else 0
        return (
            (info.is_continue_as_new_suggested() and not copied)
            or info.get_current_history_length() > HISTORY_EVENTS
            or info.get_current_history_size() > HISTORY_BYTES + copied
            or self._totals.updates_this_workflow_run >= UPDATES_PER_RUN
            or (limit is not None and self._totals.runs_this_workflow_run >= limit)
            or (index is not None and index.bytes > INDEX_BYTES_CARRIED)
        )

    def target_changed(self) -> bool:
        """Whether a new build became the deployment's current one (worker
        versioning) while this pinned workflow run kept to its own."""
        return (
            not self._sends.closed and workflow.info().is_target_worker_deployment_version_changed()
        )

    def build_changed(self) -> bool:
        """``target_changed``, decided: the session then moves to the new build by
        continue-as-new between messages (``continue_as_new(..., upgrade=True)``)."""
        return self.target_changed() and workflow.patched(MOVE_TO_NEW_BUILD)

    def log_index(self) -> LogIndex | None:
        """Where this workflow run's part of the log is in its history, as it ends."""
        index, thread = self._runner.log_index, self._runner.state.session.thread
        found = index.index(thread, log_info(thread, base=False)) if index is not None else None
        if found is not None and thread.base is not None and thread.base.anchor is not None:
            found = found.model_copy(update={"base": thread.base})  # re-anchored meanwhile
        return found

    async def continue_as_new(
        self, record: Callable[[], RunRecord], *, upgrade: bool = False
    ) -> None:
        """A fresh workflow run: the thread stays here by reference; the input holds
        the queue, the latest results and events, the totals, how old what the
        thread relies on is (``anchoring``), and what readers of this run once
        closed take from its history (log index, marks, events index: payloads
        only, no command changes; ``record`` gives the last two as the run ends).
        ``upgrade``: the new run starts on the deployment's current build, not
        this run's."""
        self._sends.ending = True  # held sends return their ticket; the client polls the new run
        self._observer.events.stream.detach_pollers()
        anchoring = self.anchoring
        await workflow.wait_condition(
            lambda: workflow.all_handlers_finished() and not anchoring.busy
        )
        info, totals, session = workflow.info(), self._totals, self._runner.state.session
        carried = session.thread.continued(info.workflow_id, info.run_id)
        workflow.continue_as_new(
            SessionInput(
                agent=totals.agent,
                session=session.model_copy(update={"thread": carried}),
                options=self._options,
                runs=totals.runs,
                session_id=session.info.id,
                used_tokens=totals.used_tokens,
                turns=totals.turns,
                cost_usd=totals.cost_usd,
                stream=self._observer.events.carried(
                    max_events=EVENTS_CARRIED, max_bytes=EVENT_BYTES_CARRIED
                ),
                tickets=self._sends.tickets,
                queue=self._sends.queue(),
                results=self._sends.carried(),
                requests=self._sends.requests.carried(),
                previous_log=self.log_index(),
                depends_since=anchoring.carried_since(),
                log_bytes=anchoring.carried_bytes(),
                previous_record=record(),
            ),
            initial_versioning_behavior=(
                workflow.ContinueAsNewVersioningBehavior.AUTO_UPGRADE if upgrade else None
            ),
        )
