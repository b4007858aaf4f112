"""The agent loop, as a helper any workflow can call.

``AgentRun`` is this loop plus queries; a workflow of your own can call
``run_agent`` (or keep an ``AgentRunner``) to compose agents with other steps.
The loop only sequences the run; its parts live beside it: the ledger of session
and execution (``ledger``), the agent's state (``state_commits``), building and
taking turns (``turn_scheduling``), pending work (``pending_calls``), sub-agents
(``sub_agents``), what
the UI shows (``progress``) and failures (``failures``). The thread is a log
(``ratchet.agents._views``): each turn names the positions it sends, and
compaction happens in the turn activity, on the view.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ratchet.agents._engine import AgentStateExport, missing_answer
    from ratchet.errors import (
        BudgetExceededError,
        InvalidInputError,
        MaxTurnsExceededError,
        ShareTokenError,
    )
    from ratchet.types import (
        AgentRecord,
        AgentSession,
        AgentStatus,
        ExecutionRecord,
        Message,
        ShareToken,
        StateConflict,
        StateEntry,
        ThreadBase,
        ThreadData,
    )
    from ratchet.wire import RunOptions, RunResult, StopRequest, TurnOutput, new_messages

    from ._failures import run_failure
    from ._ledger import Observer, RunLedger, initial_session, workflow_message_id
    from ._log_index import LogIndexer
    from ._patches import RESULTS_WHEN_SETTLED, patched
    from ._pending_calls import PendingWork, RunSide, SessionAudit
    from ._progress import ShowDetails, turn_summary
    from ._state_commits import AgentStateKeeper, StateHook
    from ._sub_agents import SubAgents
    from ._thread_query import thread_registry
    from ._turn_scheduling import TurnCalls, TurnInputs, TurnSetup

__all__ = ["AgentRunner", "RunHooks", "run_agent"]

FAST_DETAILS_EVERY = 10


@dataclass(frozen=True)
class RunHooks:
    """How the workflow hosting a runner follows its runs."""

    observers: Sequence[Observer] = ()
    """Called with every change of the execution (status, turns, usage)."""
    state_hooks: Sequence[StateHook] = ()
    """Called with every ``StateChanged`` committed on the agent's keys."""
    details: ShowDetails | None = None
    """Shows the run's progress (Markdown); default: the workflow's current details."""
    between_turns: Callable[[], Awaitable[None]] | None = None
    """Awaited after each non-final turn (AgentRun continues-as-new there)."""
    live_events: bool = False
    """Turns send their live events to this workflow's event stream."""
    run_label: Callable[[], str] | None = None
    """The id the current run's events carry, when not the workflow's (a session
    names each of its runs)."""
    log_index: LogIndexer | None = None
    """Records where each message appended to a session's log is in this workflow
    run's history."""
    settled: Sequence[Callable[[str, int, list[Message]], None]] = ()
    """Called with the agent, the next turn and the results of the work a turn left
    (approved tools, answers, sub-agents) once they are in, before that turn runs."""

    def turn_setup(self, options: RunOptions) -> TurnSetup:
        """How the run starting now gives its turns their input."""
        label = self.run_label() if self.run_label is not None else ""
        return TurnSetup(options, self.live_events, label)


@dataclass
class _Stint:
    """What one execution's loop keeps between its turns."""

    stop_request: StopRequest | None = None
    carry: list[Message] = field(default_factory=list)
    """Results settled for the next turn, which a continue-as-new must carry over."""
    turns: int = 0
    """Turns taken by this workflow run (a continue-as-new starts again from 0)."""

    def reset(self) -> None:
        """In place: pending work's hooks hold this object."""
        self.stop_request, self.carry, self.turns = None, [], 0


class AgentRunner:
    """Runs an agent turn by turn inside a workflow, holding its session and execution."""

    def __init__(
        self,
        agent: str,
        *,
        session: AgentSession | None = None,
        thread: ThreadData | Sequence[Message] | None = None,
        options: RunOptions | None = None,
        state: Mapping[str, StateEntry] | AgentStateExport | None = None,
        shared: Sequence[ShareToken] = (),
        hooks: RunHooks | None = None,
    ) -> None:
        """``state`` seeds the agent's state (e.g. from a ``StateExport``); ``shared``
        are tokens for other agents' keys in this workflow that its turns may use.
        The thread is a log: runs append to it, compaction and failures change only
        the view of it that turns send."""
        self.options = options or RunOptions()
        start = initial_session(agent, self.options, session=session, thread=thread, state=state)
        hooks = hooks or RunHooks()
        self._hooks = hooks
        self._ledger = RunLedger(
            agent, AgentRecord(session=start), observers=hooks.observers, show=hooks.details
        )
        self._ledger.index = self.log_index = hooks.log_index
        self._states = AgentStateKeeper(self._ledger, shared=shared, hooks=hooks.state_hooks)
        ledger = self._ledger
        thread_registry().register(lambda: ledger.state.session.thread)
        self._stint = _Stint()
        self.pending = self._pending_work()
        """Approvals, questions, durable tools and sub-agents the run waits for."""

    @property
    def agent(self) -> str:
        """The agent running now (a handoff changes it)."""
        return self._ledger.agent

    @property
    def state(self) -> AgentRecord:
        """Session and execution."""
        return self._ledger.state

    @property
    def stop_request(self) -> StopRequest | None:
        return self._stint.stop_request

    @property
    def carry(self) -> list[Message]:
        """Results settled for the next turn, which a continue-as-new must carry over."""
        return self._stint.carry

    @property
    def turns_this_run(self) -> int:
        return self._stint.turns

    def continued_session(self) -> AgentSession:
        """The session as a new workflow run (continue-as-new) starts with it: its
        thread's messages named by reference to this run, which holds them."""
        info, session = workflow.info(), self.state.session
        thread = session.thread.continued(info.workflow_id, info.run_id)
        return session.model_copy(update={"thread": thread})

    @property
    def waiting(self) -> list[str]:
        """What the run waits for, one line each (empty unless it is waiting)."""
        return self._ledger.waiting

    @property
    def state_conflicts(self) -> list[StateConflict]:
        return self._states.conflicts

    @property
    def tokens(self) -> list[ShareToken]:
        """The share tokens granted on this agent's keys (by the host or by its turns)."""
        return list(self.state.session.shares.values())

    def share(self, key: str, *, write: bool = False) -> ShareToken:
        """A token that lets another agent of this workflow read ``key`` (and update it,
        if ``write``): pass it to that agent's ``run_agent(..., shared=[token])``."""
        token = ShareToken(
            id=f"share_{workflow.uuid4().hex[:16]}",
            owner="",
            agent=self.agent,
            key=key,
            write=write,
        )
        return self._states.grant([token])[0]

    def stop(self, request: StopRequest) -> None:
        """Stop at the next safe point: the turn in flight is cancelled (its worker sees
        it at the next heartbeat) and discarded; finished turns are kept. Undecided
        approvals and questions are rejected. The run returns with ``request.status``."""
        if self._stint.stop_request is None:
            self._stint.stop_request = request

    def reset(self, *, agent: str | None = None, options: RunOptions | None = None) -> None:
        """Forget the last execution (a session runs one per message), and run the
        next one as ``agent`` with ``options``."""
        if agent is not None:
            self._ledger.agent = agent
        if options is not None:
            self.options = options
        self._stint.reset()
        self._states.reset()
        self._ledger.reset()
        self.pending = self._pending_work()

    def _pending_work(self) -> PendingWork:
        ledger, stint = self._ledger, self._stint
        return PendingWork(
            RunSide(
                options=self.options,
                agent=lambda: ledger.agent,
                execution_id=lambda: ledger.execution.execution_id,
                stopped=lambda: stint.stop_request is not None,
                set_status=ledger.set_status,
                run_sub_agent=SubAgents(self.options, ledger, lambda: stint.stop_request).run,
                audit=SessionAudit.of(lambda: ledger.state),
                held=ledger.held if ledger.index is not None else None,
            )
        )

    async def run(
        self, messages: str | Sequence[Message], *, resume: ExecutionRecord | None = None
    ) -> RunResult:
        """Run to a final answer. ``resume`` continues an execution carried over from an
        earlier workflow run (continue-as-new); its messages are already in the thread."""
        ledger, stint, options = self._ledger, self._stint, self.options
        try:
            pending = _first_messages(messages, resume)
        except InvalidInputError as e:
            raise run_failure("InvalidInputError", str(e)) from e
        self._begin(resume)
        inputs = TurnInputs(self._hooks.turn_setup(options), ledger, self._states)
        calls = TurnCalls(options, ledger, lambda: stint.stop_request is not None)
        previous: list[Message] = []
        for turn in range(ledger.execution.step_count + 1, options.max_turns + 1):
            output = None
            if stint.stop_request is None:
                ledger.set_execution(ledger.execution.mark_step_started(workflow.now()))
                output = await calls.take_stoppable(
                    inputs.build(turn, pending), turn_summary(turn, pending, previous)
                )
            if output is None:  # stopped (while the turn ran: it is discarded)
                return self._stopped(pending, inputs.logged)
            added = self._apply(turn, pending, output)
            self._check_budget()
            if output.final_id is not None:
                ledger.set_execution(ledger.execution.with_status(AgentStatus.COMPLETED))
                ledger.show()
                return self._result(next(m for m in added if m.id == output.final_id))
            pending, previous = await self._between_turns(turn, output), added
        failure = MaxTurnsExceededError(options.max_turns, missing_answer(previous))
        ledger.fail("MaxTurnsExceededError", str(failure))

    def _begin(self, resume: ExecutionRecord | None) -> None:
        """Start the execution (or take up the one carried over) and check the share
        tokens the run was given."""
        ledger = self._ledger
        if resume is not None:
            ledger.set_execution(resume)
        else:
            # Every turn's input carries the execution id; the shorter form is unique enough.
            execution_id = workflow.uuid4().hex[:12]
            ledger.set_execution(ExecutionRecord.start(execution_id, workflow.now()))
        if self._states.shared:
            try:
                self._states.shared_entries()
            except ShareTokenError as e:
                ledger.fail("ShareTokenError", str(e))

    async def _between_turns(self, turn: int, output: TurnOutput) -> list[Message]:
        """After a turn that did not end the run: settle the work it left (the results
        are the next turn's new messages, written once, in its input), take a handoff,
        and let the host act (AgentRun continues as new there)."""
        ledger, stint = self._ledger, self._stint
        pending: list[Message] = []
        if output.pending:
            pending = await self.pending.settle(turn, output.pending)
            _settled(self._hooks, ledger.agent, turn + 1, pending)
            self._check_budget()
        if output.handoff:
            workflow.logger.info("Agent %s hands the run over to %s", ledger.agent, output.handoff)
            ledger.agent = output.handoff
        stint.turns += 1
        stint.carry = pending
        if self._hooks.between_turns is not None and stint.stop_request is None:
            await self._hooks.between_turns()
        return pending

    def _stopped(self, pending: list[Message], logged: list[Message]) -> RunResult:
        """End a stopped run; messages already settled for the next turn are kept."""
        request = self._stint.stop_request
        assert request is not None
        if pending and pending is not logged:  # the log holds them once a turn took them
            self._ledger.append(pending)
        self._ledger.set_execution(self._ledger.execution.with_status(AgentStatus(request.status)))
        self._ledger.show()
        return self._result(None)

    def _check_budget(self) -> None:
        budget = self.options.token_budget
        used = self._ledger.execution.usage.total_tokens
        if budget is not None and used > budget:
            self._ledger.fail("BudgetExceededError", str(BudgetExceededError(used, budget)))

    def _apply(self, turn: int, pending: list[Message], output: TurnOutput) -> list[Message]:
        ledger = self._ledger
        by_id = {m.id: m for m in pending}
        added = [by_id[a] if isinstance(a, str) else a for a in output.added]
        # The log holds the turn's new messages already; the turn may have changed the view.
        fresh = [a for a in output.added if not isinstance(a, str)]
        ledger.append(
            fresh, cursor=output.cursor, view=output.view, prompt=output.prompt, held=True
        )
        try:
            self._states.commit(turn, output.state, output.write_id)
        except ShareTokenError as e:
            ledger.fail("ShareTokenError", str(e))
        self._states.grant(output.shares)
        self.pending.record_policy(output.decisions)
        ledger.record_turn(turn, added, output.usage, final=output.final_id is not None)
        fast = self.options.fast
        if not fast or output.final_id is not None or turn % FAST_DETAILS_EVERY == 0:
            # Encoding the details costs a payload per activation; fast mode (a turn in a
            # few milliseconds) refreshes them every few turns instead of every turn.
            ledger.show()
        return added

    def _result(self, final: Message | None) -> RunResult:
        execution, session = self._ledger.execution, self.state.session
        return RunResult(
            workflow_id=workflow.info().workflow_id,
            agent=self.agent,
            status=execution.status,
            final_response=final,
            usage=execution.usage,
            turns=execution.step_count,
            session_id=session.info.id,
            state_conflicts=self._states.conflicts,
            thread=session.thread,
            thread_end=ThreadBase(
                workflow_id=workflow.info().workflow_id,
                run_id=workflow.info().run_id,
                version=session.thread.length,
                last_id=session.thread.last_id,
                thread_id=session.thread.id,
            ),
        )


def _first_messages(
    messages: str | Sequence[Message], resume: ExecutionRecord | None
) -> list[Message]:
    if resume is None:
        return new_messages(messages, workflow_message_id)
    if isinstance(messages, str):
        raise InvalidInputError(
            "A resumed run takes the messages its execution carried (a list), not a prompt."
        )
    return list(messages)  # results settled for its next turn, perhaps none


async def run_agent(
    agent: str,
    messages: str | Sequence[Message],
    *,
    thread: ThreadData | Sequence[Message] | None = None,
    session: AgentSession | None = None,
    options: RunOptions | None = None,
    state: Mapping[str, StateEntry] | AgentStateExport | None = None,
    shared: Sequence[ShareToken] = (),
) -> RunResult:
    """Run ``agent`` to its final answer from inside any workflow; one activity per turn.

    The result's ``thread`` holds the whole conversation for the next step of your
    workflow; it is never written to history unless you return it yourself.
    """
    runner = AgentRunner(
        agent, session=session, thread=thread, options=options, state=state, shared=shared
    )
    return await runner.run(messages)


def _settled(hooks: RunHooks, agent: str, turn: int, results: list[Message]) -> None:
    """The work a turn left is in: its results go to the hooks before ``turn`` runs."""
    if hooks.settled and patched(RESULTS_WHEN_SETTLED):
        for hook in hooks.settled:
            hook(agent, turn, results)
