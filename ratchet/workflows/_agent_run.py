"""AgentRun: one agent run, one workflow; one turn, one activity.

``AgentRunWorkflow`` is the same workflow under the type runs had in Ratchet 0.1:
it still runs the runs and schedules started as it, and asks ``workflow.patched``
for each change since; ``AgentRun`` was born with them (``_patches``)."""

from __future__ import annotations

from collections import deque

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from temporalio.contrib.workflow_streams import WorkflowStream

    from ratchet.errors import UsageError
    from ratchet.types import (
        AgentSession,
        ExecutionRecord,
        PendingView,
        StateChanged,
        ThreadData,
        approximate_size,
    )
    from ratchet.wire import (
        AGENT_RUN_WORKFLOW,
        CHECKPOINT_QUERY,
        RUN_WORKFLOW,
        CheckpointAnswer,
        CheckpointRequest,
        LogInfo,
        RunInput,
        RunResult,
        StopRequest,
    )

    from ._anchoring import Anchoring
    from ._decisions import AgentHandlers
    from ._marks import TurnMarks, turn_mark
    from ._observe import EventStream, Index, RunObserver
    from ._runner import AgentRunner, RunHooks
    from ._sandbox import SANDBOXED
    from ._thread_query import log_info


STATE_EVENTS_KEPT = 100
CARRY_LIMIT = 1536 * 1024
"""Largest batch of settled results carried into a new workflow run (a payload may
hold 2 MB); the thread itself stays in this run, by reference."""


@workflow.defn(name=RUN_WORKFLOW, failure_exception_types=[UsageError], sandboxed=SANDBOXED)
class AgentRunWorkflow(AgentHandlers):
    """Runs an agent until it answers. History is the checkpoint log: a crash
    resumes at the last completed turn and no completed turn runs again."""

    @workflow.init
    def __init__(self, input: RunInput) -> None:
        self._input = input
        self._state_events: deque[StateChanged] = deque(maxlen=STATE_EVENTS_KEPT)
        self._ending = False
        """Set when this workflow run is about to complete or continue as new."""
        self._events = EventStream(WorkflowStream(input.stream))
        observer = RunObserver(
            self._events,
            Index(),
            session_id="",  # known once the runner holds the session
        )
        self._runner = AgentRunner(
            input.agent,
            session=input.session,
            options=input.options,
            hooks=RunHooks(
                observers=[observer, lambda change: self._marks(change)],
                state_hooks=[self._state_events.append, observer.state_changed],
                between_turns=self._continue_as_new_if_due,
                live_events=True,
            ),
        )
        if input.parent_agent_id is not None:
            # A sub-agent: its own session and thread, which name their parent.
            state = self._runner.state
            state.session = _as_sub_agent(state.session, input)
        observer.session_id = self._runner.state.session.info.id
        turns = input.execution.step_count if input.execution is not None else 0
        self._marks = TurnMarks(
            turn_mark(turns, self._runner.state.session, input.agent),
            lambda: self._runner.state.session,
        )
        """This workflow run's turns (the first: where it started), for forks."""
        self._anchoring = Anchoring(
            lambda: self._runner.state, None, input.depends_since, input.log_bytes
        )

    @workflow.run
    async def run(self, input: RunInput) -> RunResult:
        input.options.check()  # a bad value fails the run (UsageError), never wedges it
        self._anchoring.start()
        try:
            result = await self._runner.run(input.messages, resume=input.execution)
        finally:
            self._ending = True
            self._events.stream.detach_pollers()  # watchers read the rest by query
        await workflow.wait_condition(workflow.all_handlers_finished)
        return result

    async def _continue_as_new_if_due(self) -> None:
        """Between turns, start a fresh workflow run carrying session and execution
        (model B) when the history is getting long; the run goes on where it was.
        The thread stays here, by reference: the new run names this one for it."""
        runner = self._runner
        limit = runner.options.continue_as_new_after_turns
        suggested = workflow.info().is_continue_as_new_suggested()
        due = (suggested and not self._anchoring.copies) or (
            limit is not None and runner.turns_this_run >= limit
        )
        if not due or runner.stop_request is not None:
            return
        carried = sum(approximate_size(m) for m in runner.carry)
        if carried > CARRY_LIMIT:
            # The new run's input would carry results too large for one payload; the
            # next turn takes them here, and the run continues as new after it.
            return
        self._ending = True
        self._events.stream.detach_pollers()  # watchers follow to the new run
        anchoring = self._anchoring
        await workflow.wait_condition(
            lambda: workflow.all_handlers_finished() and not anchoring.busy
        )
        if runner.stop_request is not None:  # a stop arrived meanwhile: finish here
            self._ending = False
            return
        workflow.continue_as_new(
            RunInput(
                agent=runner.agent,
                messages=runner.carry,
                session=runner.continued_session(),
                options=runner.options,
                execution=runner.state.execution,
                stream=self._events.state(),
                depends_since=anchoring.carried_since(),
                log_bytes=anchoring.carried_bytes(),
                # Marks only: a single run's log is not indexed, so the events it
                # published whole (tool results) would carry its thread's texts here.
                previous_record=self._marks.record(runner.state.session.thread),
            )
        )

    @workflow.signal
    def stop(self, request: StopRequest) -> None:
        """Stop at the next safe point, keeping finished turns (see AgentRunner.stop)."""
        self._runner.stop(request)

    @workflow.update
    async def wait_pending(self) -> list[PendingView]:
        """Wait until the run waits for someone, then list what for. Returns an empty
        list if this workflow run ends (completes or continues as new) first."""
        await workflow.wait_condition(lambda: bool(self._runner.pending.view()) or self._ending)
        return self._runner.pending.view()

    @workflow.query
    def state_changes(self) -> list[StateChanged]:
        """The latest committed state changes of this workflow run, oldest first."""
        return list(self._state_events)

    @workflow.query
    def thread(self) -> ThreadData:
        """This workflow run's part of the thread (``base`` names the rest)."""
        return self._runner.state.session.thread

    @workflow.query
    def log_info(self) -> LogInfo:
        """Where the thread is (id, length, view, cursor), without its messages: read
        them with the ``ratchet.thread`` page query."""
        return log_info(self._runner.state.session.thread)

    @workflow.query(name=CHECKPOINT_QUERY)
    def checkpoint(self, request: CheckpointRequest) -> CheckpointAnswer:
        """The mark after a turn, for a fork (see ``marks.TurnMarks.answer``)."""
        return self._marks.answer(request, self._runner.state.session.thread, None)

    @workflow.query
    def execution(self) -> ExecutionRecord | None:
        return self._runner.state.execution


@workflow.defn(name=AGENT_RUN_WORKFLOW, failure_exception_types=[UsageError], sandboxed=SANDBOXED)
class AgentRun(AgentRunWorkflow):
    """An agent run, as Ratchet starts it since 0.2: ``AgentRunWorkflow`` born with
    every change made since 0.1, so its runs record no patch marker (each a billed
    action on Temporal Cloud)."""

    @workflow.run
    async def run(self, input: RunInput) -> RunResult:
        return await super().run(input)


def _as_sub_agent(session: AgentSession, input: RunInput) -> AgentSession:
    return session.model_copy(
        update={
            "parent_agent_id": input.parent_agent_id,
            "metadata": {"parent_workflow_id": input.parent_workflow_id},
        }
    )
