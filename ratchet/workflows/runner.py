"""The agent loop, as a helper any workflow can call.

``AgentRunWorkflow`` is this loop plus queries; a workflow of your own can call
``run_agent`` (or keep an ``AgentRunner``) to compose agents with other steps.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import NoReturn

from temporalio import workflow
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    ChildWorkflowError,
    FailureError,
    is_cancelled_exception,
)

with workflow.unsafe.imports_passed_through():
    from ratchet.agents import views
    from ratchet.agents.compaction import Summarize
    from ratchet.agents.messages import Message, approximate_size
    from ratchet.agents.pending import PendingAction
    from ratchet.agents.state import (
        AgentSession,
        AgentState,
        AgentStatus,
        ExecutionState,
        StepResult,
        ThreadData,
    )
    from ratchet.agents.state_context import ShareToken, StateChanged, StateConflict, StateEntry
    from ratchet.agents.state_export import AgentStateExport
    from ratchet.errors import (
        BudgetExceededError,
        InvalidInputError,
        MaxTurnsExceededError,
        ShareTokenError,
    )
    from ratchet.wire.handoff import HANDOFF
    from ratchet.wire.names import THREAD_NOT_CACHED, TURN_ACTIVITY
    from ratchet.wire.options import RunOptions
    from ratchet.wire.runs import RunResult, StopRequest, new_messages
    from ratchet.wire.turns import ThreadRef, TurnInput, TurnOutput

    from .patches import patched
    from .pending import PendingWork, RunSide, failure_text
    from .presets import turn_retry_policy
    from .state import StateHook, state_registry
    from .threads import thread_registry

PROGRESS_ROWS = 20
FAST_DETAILS_EVERY = 10
THREAD_REF_PATCH = "ratchet.thread-ref"
"""Runs started before threads by reference replay with the thread inline."""


def _first_messages(
    messages: str | Sequence[Message], resume: ExecutionState | None
) -> list[Message]:
    if resume is None:
        return new_messages(messages, _workflow_message_id)
    if isinstance(messages, str):
        raise InvalidInputError(
            "A resumed run takes the messages its execution carried (a list), not a prompt."
        )
    return list(messages)  # results settled for its next turn, perhaps none


def _workflow_message_id() -> str:
    return f"msg_{workflow.uuid4().hex[:16]}"


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
        log: bool = False,
    ) -> None:
        """``state`` seeds the agent's state (e.g. from a ``StateExport``); ``shared``
        are tokens for other agents' keys in this workflow that its turns may use.
        ``log``: the thread is a session's log (see ``ratchet.agents.views``): runs
        append to it, compaction and failures change only the agent's view of it."""
        self.agent = agent
        self.options = options or RunOptions()
        session = session or AgentSession.new(
            agent,
            workflow.now(),
            session_id=f"session-{workflow.uuid4().hex[:12]}",
            thread_id=f"thread-{workflow.uuid4().hex[:12]}",
            thread_kind=self.options.thread_kind,
        )
        if thread is not None:
            if not isinstance(thread, ThreadData):
                thread = ThreadData(id=session.thread.id, messages=list(thread))
            session = session.model_copy(update={"thread": thread})
        if any(not m.id for m in session.thread.messages):
            # A reference names a version by its last message's id: every message needs one.
            messages = [
                m if m.id else m.model_copy(update={"id": _workflow_message_id()})
                for m in session.thread.messages
            ]
            session = session.model_copy(
                update={"thread": session.thread.model_copy(update={"messages": messages})}
            )
        if state is not None:
            entries = (
                state.entries_to_load()
                if isinstance(state, AgentStateExport)
                else {k: e.model_copy(update={"origin": None}) for k, e in state.items()}
            )
            session = session.model_copy(update={"state": entries})
        if log and session.thread.kind == "messages" and session.thread.view is None:
            session = session.model_copy(
                update={"thread": session.thread.model_copy(update={"view": views.whole()})}
            )
        self.log = log
        self.state = AgentState(session=session)
        self.shared = list(shared)
        self.state_hooks: list[StateHook] = []
        """Called with every ``StateChanged`` committed on this agent's keys."""
        self.state_conflicts: list[StateConflict] = []
        self._undelivered: list[StateConflict] = []
        self._states = state_registry()
        self._states.register(self)
        self.turns_this_run = 0
        self.between_turns: Callable[[], Awaitable[None]] | None = None
        """Awaited after each non-final turn (AgentRunWorkflow continues-as-new there)."""
        self._thread_bytes = sum(approximate_size(m) for m in session.thread.messages)
        thread_registry().register(lambda: self.state.session.thread)
        self.pending = PendingWork(self._run_side())
        """Approvals, questions, durable tools and sub-agents the run waits for."""
        self.stop_request: StopRequest | None = None
        self.carry: list[Message] = []
        self._logged: list[Message] = []
        """The new messages the last turn over a session's log appended already."""
        """Results settled for the next turn, which a continue-as-new must carry over."""
        self._waiting_rows: list[str] = []
        self.observers: list[Callable[[ExecutionState | None, ExecutionState], None]] = []
        """Called with the old and new execution whenever it changes (status, turns, usage)."""
        self.details_hook: Callable[[str], None] | None = None
        """Called with the run's progress (Markdown) instead of setting the details."""
        self.live_events = False
        """Turns send their live events to this workflow's event stream."""

    async def run(
        self, messages: str | Sequence[Message], *, resume: ExecutionState | None = None
    ) -> RunResult:
        """Run to a final answer. ``resume`` continues an execution carried over from an
        earlier workflow run (continue-as-new); its messages are already in the thread."""
        try:
            pending = _first_messages(messages, resume)
        except InvalidInputError as e:
            raise ApplicationError(str(e), type="InvalidInputError", non_retryable=True) from e
        self._by_reference = patched(THREAD_REF_PATCH)
        if resume is not None:
            self._set_execution(resume)
        else:
            # Every turn's input carries the execution id; the shorter form is unique enough.
            execution_id = (
                workflow.uuid4().hex[:12] if self._by_reference else str(workflow.uuid4())
            )
            self._set_execution(ExecutionState.start(execution_id, workflow.now()))
        if self.shared:
            try:
                self._states.shared_entries(self.shared)
            except ShareTokenError as e:
                self._fail("ShareTokenError", str(e))
        previous: list[Message] = []
        for turn in range(self._execution.step_count + 1, self.options.max_turns + 1):
            if self.stop_request is not None:
                return self._stopped(pending)
            await self._compact_if_needed(turn)
            self._set_execution(self._execution.mark_step_started(workflow.now()))
            output = await self._take_stoppable_turn(
                self._turn_input(turn, pending), turn_summary(turn, pending, previous)
            )
            if output is None:  # stopped while the turn ran: it is discarded
                return self._stopped(pending)
            added = self._apply(turn, pending, output)
            self._check_budget()
            if output.final_id is not None:
                self._set_execution(self._execution.with_status(AgentStatus.COMPLETED))
                self._details(progress_markdown(self.agent, self._execution))
                return self._result(next(m for m in added if m.id == output.final_id))
            pending, previous = [], added
            if output.pending:
                # The results are the next turn's new messages (written once, in its input).
                pending = await self.pending.settle(turn, output.pending)
                self._check_budget()
            if output.handoff:
                self._hand_off(output.handoff)
            self.turns_this_run += 1
            self.carry = pending
            if self.between_turns is not None and self.stop_request is None:
                await self.between_turns()
        self._fail("MaxTurnsExceededError", str(MaxTurnsExceededError(self.options.max_turns)))

    def reset(self) -> None:
        """Forget the last execution (a session runs one per message)."""
        self.stop_request = None
        self.carry = []
        self._logged = []
        self.state_conflicts = []
        self._undelivered = []
        self._waiting_rows = []
        self.turns_this_run = 0
        self.pending = PendingWork(self._run_side())
        self.state.execution = None

    def stop(self, request: StopRequest) -> None:
        """Stop at the next safe point: the turn in flight is cancelled (its worker sees
        it at the next heartbeat) and discarded; finished turns are kept. Undecided
        approvals and questions are rejected. The run returns with ``request.status``."""
        if self.stop_request is None:
            self.stop_request = request

    def _stopped(self, pending: list[Message]) -> RunResult:
        """End a stopped run; messages already settled for the next turn are kept."""
        assert self.stop_request is not None
        if pending and pending is not self._logged:  # a log holds them once a turn took them
            self._append(pending)
        self._set_execution(self._execution.with_status(AgentStatus(self.stop_request.status)))
        self._details(progress_markdown(self.agent, self._execution))
        return self._result(None)

    async def _take_stoppable_turn(self, input: TurnInput, summary: str) -> TurnOutput | None:
        task = asyncio.ensure_future(self._take_turn(input, summary))
        try:
            await workflow.wait_condition(lambda: task.done() or self.stop_request is not None)
        except asyncio.CancelledError:
            # The workflow itself is cancelled: cancel the turn's activity with it.
            await _cancelled(task)
            raise
        if task.done():
            if self.stop_request is not None and not task.cancelled() and task.exception():
                return None  # failed as it was being stopped: the stop wins
            return task.result()
        await _cancelled(task)  # the turn ends cancelled; nothing of it is kept
        return None

    def _run_side(self) -> RunSide:
        return RunSide(
            options=self.options,
            agent=lambda: self.agent,
            execution_id=lambda: self.execution_id,
            stopped=lambda: self.stop_request is not None,
            set_status=self.set_status,
            run_sub_agent=self.run_sub_agent,
        )

    def set_status(self, status: AgentStatus, *, waiting: Sequence[str] = ()) -> None:
        self._waiting_rows = list(waiting)
        self._set_execution(self._execution.with_status(status))
        self._details(progress_markdown(self.agent, self._execution, waiting=self._waiting_rows))

    @property
    def execution_id(self) -> str:
        return self._execution.execution_id

    def _check_budget(self) -> None:
        budget = self.options.token_budget
        used = self._execution.usage.total_tokens
        if budget is not None and used > budget:
            self._fail("BudgetExceededError", str(BudgetExceededError(used, budget)))

    def _hand_off(self, agent: str) -> None:
        workflow.logger.info("Agent %s hands the run over to %s", self.agent, agent)
        self.agent = agent

    async def run_sub_agent(self, turn: int, action: PendingAction) -> Message:
        """Run ``action.agent`` as a child AgentRunWorkflow on the call's ``input``;
        its usage counts in this run's and it draws on this run's token budget."""
        from ratchet.wire.runs import RunInput

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
        options = self.options
        if options.token_budget is not None:
            left = options.token_budget - self._execution.usage.total_tokens
            options = options.model_copy(update={"token_budget": max(0, left)})
        try:
            child = await workflow.start_child_workflow(
                "AgentRunWorkflow",
                RunInput(
                    agent=action.agent,
                    messages=[Message(role="user", content=prompt, id=_workflow_message_id())],
                    options=options,
                    parent_agent_id=self.state.session.agent_id,
                    parent_workflow_id=workflow.info().workflow_id,
                ),
                id=f"sub-{self.execution_id}-{turn}-{call.id}",
                result_type=RunResult,
                static_summary=f"{action.agent} · sub-agent of {self.agent}",
                static_details=run_details(
                    action.agent,
                    [Message.user(prompt)],
                    session=None,
                    parent=f"{self.agent} ({workflow.info().workflow_id})",
                ),
            )
            await workflow.wait_condition(lambda: child.done() or self.stop_request is not None)
            if not child.done() and self.stop_request is not None:
                await child.signal("stop", self.stop_request)  # it returns what it finished
            result: RunResult = await child
        except ChildWorkflowError as e:
            cause = e.cause
            if isinstance(cause, ApplicationError) and cause.type == "BudgetExceededError":
                self._fail("BudgetExceededError", f"Sub-agent {action.agent}: {cause.message}")
            return Message.tool(
                call, f"Error: sub-agent {action.agent} failed: {failure_text(e)}", is_error=True
            )
        usage = self._execution.usage + result.usage
        self._set_execution(self._execution.model_copy(update={"usage": usage}))
        return Message.tool(call, result.output)

    async def _compact_if_needed(self, turn: int) -> None:
        policy = self.options.compaction
        thread = self.state.session.thread
        if (
            policy is None
            or thread.kind != "messages"
            or thread.base is not None  # a session's run: the session compacts its thread
            or thread.view is not None  # a session's log: the turn compacts the view
            or not policy.over_budget(thread.messages)
        ):
            return
        if isinstance(policy, Summarize):
            pinned, older, recent = policy.split(thread.messages, policy.keep_turns)
            if not older:
                return
            request = self._turn_input(turn, [], agent=policy.agent, upto=len(pinned + older))
            output = await self._take_turn(
                request, f"compact · summarise {len(older)} messages", agent=policy.agent
            )
            summary = next(m for m in output.added if isinstance(m, Message))
            usage = self._execution.usage + output.usage
            self._set_execution(self._execution.model_copy(update={"usage": usage}))
            note = policy.summary_message(summary, len(older))
            note.id = _workflow_message_id()
            messages = [*pinned, note, *recent]
        else:
            messages = policy.compact(thread.messages)
        if len(messages) == len(thread.messages) and all(
            a is b for a, b in zip(messages, thread.messages, strict=True)
        ):
            return  # nothing to drop
        compacted = thread.model_copy(
            update={"generation": thread.generation + 1, "messages": messages}
        )
        self.state.session = self.state.session.model_copy(update={"thread": compacted})
        self._thread_bytes = sum(approximate_size(m) for m in messages)
        workflow.logger.info(
            "Compacted thread %s (%s): %d -> %d messages",
            thread.id,
            policy.strategy,
            len(thread.messages),
            len(messages),
        )

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
        return self._states.grant(self, [token])[0]

    @property
    def tokens(self) -> list[ShareToken]:
        """The share tokens granted on this agent's keys (by the host or by its turns)."""
        return list(self.state.session.shares.values())

    def state_changed(self, event: StateChanged) -> None:
        for hook in self.state_hooks:
            hook(event)

    @property
    def thread_bytes(self) -> int:
        """About the JSON size of the working thread."""
        return self._thread_bytes

    @property
    def _execution(self) -> ExecutionState:
        assert self.state.execution is not None
        return self.state.execution

    @property
    def waiting(self) -> list[str]:
        """What the run waits for, one line each (empty unless it is waiting)."""
        return list(self._waiting_rows)

    def _set_execution(self, execution: ExecutionState) -> None:
        old, self.state.execution = self.state.execution, execution
        for observe in self.observers:
            observe(old, execution)

    async def _take_turn(
        self, input: TurnInput, summary: str, *, agent: str | None = None
    ) -> TurnOutput:
        try:
            # A local activity cannot page in a thread held by the session workflow.
            thread = self.state.session.thread
            if self.options.fast and (thread.base is None or thread.view is not None):
                return await self._take_local_turn(input, summary)
            return await self._activity(input, summary)
        except (asyncio.CancelledError, ActivityError, ApplicationError) as e:
            if is_cancelled_exception(e) or self.stop_request is not None:
                self._set_execution(self._execution.with_status(AgentStatus.CANCELLED))
                raise
            # A local activity's failure (fast mode) may arrive unwrapped.
            cause = e.cause if isinstance(e, ActivityError) else e
            message = cause.message if isinstance(cause, FailureError) else str(e)
            kind = cause.type if isinstance(cause, ApplicationError) else type(cause).__name__
            self._fail(
                kind or "TurnFailed",
                f"Turn {input.turn} of agent {agent or self.agent!r} failed: {message}",
            )

    async def _take_local_turn(self, input: TurnInput, summary: str) -> TurnOutput:
        """Fast mode. A local activity cannot page a thread in from its own workflow
        (the workflow is busy waiting for it), so a worker without the thread says
        so and the turn is taken again with the thread inline."""
        try:
            return await self._local_activity(input, summary)
        except (ActivityError, ApplicationError) as e:
            # A local activity's failure may arrive unwrapped.
            cause = e.cause if isinstance(e, ActivityError) else e
            ref = input.thread_ref
            if not (isinstance(cause, ApplicationError) and cause.type == THREAD_NOT_CACHED):
                raise
            assert ref is not None
            if input.version == 3:
                # A session's log: a regular activity can page in what is not cached.
                return await self._activity(input.model_copy(update={"new_messages": []}), summary)
            thread = self.state.session.thread
            inline = thread.model_copy(update={"messages": thread.messages[: ref.version]})
            return await self._local_activity(input.model_copy(update={"thread": inline}), summary)

    async def _activity(self, input: TurnInput, summary: str) -> TurnOutput:
        return await workflow.execute_activity(
            TURN_ACTIVITY,
            input,
            result_type=TurnOutput,
            task_queue=self.options.task_queue,
            start_to_close_timeout=self.options.turn_timeout,
            heartbeat_timeout=self.options.heartbeat_timeout,
            retry_policy=turn_retry_policy(self.options),
            summary=summary,
        )

    async def _local_activity(self, input: TurnInput, summary: str) -> TurnOutput:
        return await workflow.execute_local_activity(
            TURN_ACTIVITY,
            input,
            result_type=TurnOutput,
            start_to_close_timeout=self.options.turn_timeout,
            retry_policy=turn_retry_policy(self.options),
            summary=summary,
        )

    def _turn_input(
        self,
        turn: int,
        pending: list[Message],
        *,
        agent: str | None = None,
        upto: int | None = None,
    ) -> TurnInput:
        """The input of a turn of ``agent`` (default: this runner's) over the first
        ``upto`` messages of the thread (default: all)."""
        thread = self.state.session.thread
        if upto is not None:
            thread = thread.model_copy(update={"messages": thread.messages[:upto]})
        info = workflow.info()
        common: dict = dict(
            execution_id=self._execution.execution_id,
            agent=agent or self.agent,
            turn=turn,
            new_messages=pending,
        )
        if self.live_events and not self.options.fast:
            # A local activity (fast mode) holds the workflow task its signals would need.
            common["events"] = True
        if agent is None:
            # Another agent's turn over this thread (compaction) gets none of this one's state.
            common.update(self._state_input(), conflicts=self._undelivered)
            if self.shared:
                common["shared"] = self._states.shared_entries(self.shared)
        if not self._by_reference:
            return TurnInput(version=1, run_id=info.workflow_id, thread=thread, **common)
        if thread.view is not None and agent is None:
            return self._log_input(thread, pending, common)
        if thread.kind != "messages":
            # The service holds the conversation: send its cursor and what it has not seen.
            unsent = thread.model_copy(update={"messages": thread.unsent})
            return TurnInput(version=2, thread=unsent, **common)
        mode = self.options.thread_mode
        inline = (
            bool(thread.messages)
            and thread.base is None
            and (
                mode == "inline"
                or (
                    mode == "auto"
                    and upto is None
                    and self._thread_bytes <= self.options.inline_thread_bytes
                )
            )
        )
        ref = ThreadRef(
            id=thread.id,
            generation=thread.generation,
            version=thread.length,
            last_id=thread.last_id,
            base=thread.base,
        )
        # Version 2 leaves out run_id: the worker reads it from the activity's info.
        return TurnInput(version=2, thread=thread if inline else None, thread_ref=ref, **common)

    def _log_input(self, thread: ThreadData, pending: list[Message], common: dict) -> TurnInput:
        """A turn over a session's log: the new messages join the log first (they
        are in history already, in the send that brought them, or in the results
        the workflow settled), and the turn names them by position."""
        start = thread.length
        ref = ThreadRef(id=thread.id, version=start, last_id=thread.last_id)
        if pending:
            self._append(pending)
            self._logged = pending
        common["new_messages"] = pending if self.options.fast else []
        new_last_id = None
        if pending and not self.options.fast:
            # A local activity gets them inline; a turn this process runs, by hand.
            new_last_id = pending[-1].id
            if not workflow.unsafe.is_replaying():
                HANDOFF.offer(thread.id, start, pending)
        return TurnInput(
            version=3,
            thread_ref=ref,
            view=thread.view,
            new_count=len(pending),
            compaction=self.options.compaction,
            new_last_id=new_last_id,
            **common,
        )

    def _apply(self, turn: int, pending: list[Message], output: TurnOutput) -> list[Message]:
        by_id = {m.id: m for m in pending}
        added = [by_id[a] if isinstance(a, str) else a for a in output.added]
        now = workflow.now()
        if self.state.session.thread.view is not None:
            # A session's log holds the new messages already; a compaction changed the view.
            fresh = [a for a in output.added if not isinstance(a, str)]
            self._append(fresh, view=output.view)
        else:
            self._append(added, cursor=output.cursor)
        self._commit_state(turn, output)
        step = StepResult(
            turn=turn,
            started_at=self._execution.current_step_started_at or now,
            completed_at=now,
            message_ids=[m.id for m in added],
            tool_calls=[c.describe() for m in added for c in m.tool_calls],
            usage=output.usage,
            final=output.final_id is not None,
        )
        self._set_execution(self._execution.with_step_result(step))
        if not self.options.fast or output.final_id is not None or turn % FAST_DETAILS_EVERY == 0:
            # Encoding the details costs a payload per activation; fast mode (a turn in a
            # few milliseconds) refreshes them every few turns instead of every turn.
            self._details(progress_markdown(self.agent, self._execution))
        return added

    def _append(
        self,
        messages: list[Message],
        *,
        cursor: str | None = None,
        view: list | None = None,
    ) -> None:
        session = self.state.session
        update: dict = {"messages": [*session.thread.messages, *messages]}
        if cursor is not None:
            update["cursor"] = cursor
        if view is not None:
            update["view"] = view
        thread = session.thread.model_copy(update=update)
        self._thread_bytes += sum(approximate_size(m) for m in messages)
        self.state.session = session.model_copy(
            update={"thread": thread, "info": session.info.touch(workflow.now())}
        )

    def _state_input(self) -> dict:
        """The agent's state for a turn's input: values whose origin a worker can cache
        go by reference, unless the turn is a local activity (it cannot ask the workflow)."""
        state = self.state.session.state
        if self.options.fast or self.options.thread_mode == "inline" or not self._by_reference:
            return {"state": state}
        inline = {k: e for k, e in state.items() if e.origin is None}
        refs = {k: e.origin for k, e in state.items() if e.origin is not None}
        if not refs:
            return {"state": inline}
        return {"state": inline, "state_refs": refs, "session_id": self.state.session.info.id}

    def _commit_state(self, turn: int, output: TurnOutput) -> None:
        try:
            conflict = self._states.commit(self, turn, output.state, output.write_id)
        except ShareTokenError as e:
            self._fail("ShareTokenError", str(e))
        self._states.grant(self, output.shares)
        self._undelivered = [conflict] if conflict else []
        if conflict:
            # Not lost: the agent's next turn sees it in context.state.conflicts.
            self.state_conflicts.append(conflict)
            workflow.logger.warning("State conflict: %s", conflict)

    def _result(self, final: Message | None) -> RunResult:
        execution = self._execution
        return RunResult(
            workflow_id=workflow.info().workflow_id,
            agent=self.agent,
            status=execution.status,
            final_response=final,
            usage=execution.usage,
            turns=execution.step_count,
            session_id=self.state.session.info.id,
            state_conflicts=self.state_conflicts,
            messages=self.state.session.thread.messages if self._holds_part() else [],
            state=self.state.session.state if self._holds_part() else {},
            thread=self.state.session.thread,
        )

    def _details(self, text: str) -> None:
        """Show the run's progress in the workflow's current details (a session
        shows it under its own)."""
        if self.details_hook is not None:
            self.details_hook(text)
        else:
            workflow.set_current_details(text)

    def _holds_part(self) -> bool:
        """A run of a session's thread held by the session (legacy sessions)."""
        return self.state.session.thread.base is not None and not self.log

    def _fail(self, kind: str, message: str) -> NoReturn:
        self._set_execution(self._execution.with_status(AgentStatus.FAILED))
        self._details(progress_markdown(self.agent, self._execution, error=message))
        raise ApplicationError(message, type=kind, non_retryable=True)


async def _cancelled(task: asyncio.Future) -> None:
    task.cancel()
    try:
        await task
    except (asyncio.CancelledError, ActivityError, ApplicationError):
        pass


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


def turn_summary(turn: int, pending: Sequence[Message], previous: Sequence[Message]) -> str:
    """What the UI shows for a turn activity: what this turn is given to work on."""
    calls = [c.describe(40) for m in previous for c in m.tool_calls]
    if calls:
        shown = ", ".join(calls[:3]) + (f" +{len(calls) - 3}" if len(calls) > 3 else "")
        return f"turn {turn} · after {shown}"
    text = next((m.text for m in reversed(pending) if m.text), "")
    if text:
        text = text if len(text) <= 60 else text[:59] + "…"
        return f"turn {turn} · {json.dumps(text, ensure_ascii=False)}"
    return f"turn {turn}"


def run_details(
    agent: str,
    messages: Sequence[Message],
    *,
    session: str | None,
    parent: str | None,
    limit: int = 600,
) -> str:
    """A run's static details for the UI: agent, first prompt, session and parent."""
    prompt = next((m.text for m in messages if m.role == "user" and m.text), "")
    if len(prompt) > limit:
        prompt = prompt[: limit - 1] + "…"
    lines = [f"**Agent:** {agent}"]
    if session:
        lines.append(f"**Session:** `{session}`")
    if parent:
        lines.append(f"**Parent:** `{parent}`")
    if prompt:
        lines += ["", "**Prompt:**", "", *(f"> {line}" for line in prompt.splitlines())]
    return "\n".join(lines)


def progress_markdown(
    agent: str,
    execution: ExecutionState,
    error: str | None = None,
    waiting: Sequence[str] = (),
) -> str:
    """The run's current details for the UI: one row per checkpointed turn."""
    lines = [
        f"**{agent}** · {execution.status.value} · {execution.step_count} turns · "
        f"{execution.usage.total_tokens} tokens",
        "",
        "| turn | did |",
        "|---|---|",
    ]
    shown = execution.step_results[-PROGRESS_ROWS:]
    if execution.step_count > len(shown):
        lines.append(f"| … | {execution.step_count - len(shown)} earlier turns |")
    for step in shown:
        did = "final answer" if step.final else ", ".join(step.tool_calls) or "(no tools)"
        lines.append(f"| {step.turn} | {did.replace('|', '/')} |")
    if waiting:
        lines += ["", f"**Waiting for** ({execution.status.value}):"]
        lines += [f"- {w.replace('|', '/')}" for w in waiting]
    if error:
        lines += ["", f"**Failed:** {error}"]
    return "\n".join(lines)
