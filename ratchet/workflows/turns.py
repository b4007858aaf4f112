"""Turns: what a turn's activity is given, and taking it (one activity per turn,
a local one in fast mode), so that a stop discards the turn in flight."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from ratchet.agents.messages import Message
    from ratchet.agents.state import AgentStatus, ThreadData
    from ratchet.wire.handoff import HANDOFF
    from ratchet.wire.names import THREAD_NOT_CACHED, TURN_ACTIVITY
    from ratchet.wire.options import RunOptions
    from ratchet.wire.turns import ThreadRef, TurnInput, TurnOutput

    from .failures import cancelled, turn_failure
    from .ledger import RunLedger
    from .presets import turn_retry_policy
    from .state import AgentStateKeeper


@dataclass(frozen=True)
class TurnSetup:
    """How this run's turns are given their thread and state."""

    options: RunOptions
    live_events: bool
    """Turns send their live events to the workflow's event stream."""


class TurnInputs:
    """Builds each turn's ``TurnInput`` from the ledger and the agent's state."""

    def __init__(self, setup: TurnSetup, ledger: RunLedger, states: AgentStateKeeper) -> None:
        self._setup = setup
        self._ledger = ledger
        self._states = states
        self.logged: list[Message] = []
        """The new messages the last turn over a session's log appended already."""

    def build(
        self,
        turn: int,
        pending: list[Message],
        *,
        agent: str | None = None,
        upto: int | None = None,
    ) -> TurnInput:
        """The input of a turn of ``agent`` (default: the run's) over the first
        ``upto`` messages of the thread (default: all)."""
        setup, options, ledger = self._setup, self._setup.options, self._ledger
        thread = ledger.thread
        if upto is not None:
            thread = thread.model_copy(update={"messages": thread.messages[:upto]})
        common: dict = dict(
            execution_id=ledger.execution.execution_id,
            agent=agent or ledger.agent,
            turn=turn,
            new_messages=pending,
            fit_window=options.fit_window,
        )
        if setup.live_events and not options.fast:
            # A local activity (fast mode) holds the workflow task its signals would need.
            common["events"] = True
        if agent is None:
            common["prompt"] = thread.prompt  # a summariser's prompt is counted afresh
            # Another agent's turn over this thread (compaction) gets none of this one's state.
            inline = options.fast or options.thread_mode == "inline"
            common.update(self._states.turn_input(inline=inline))
            common["conflicts"] = self._states.undelivered
            if self._states.shared:
                common["shared"] = self._states.shared_entries()
            if options.recording is not None:
                common["recording"] = options.recording
        if thread.view is not None and agent is None:
            return self._log_input(thread, pending, common)
        if thread.kind != "messages":
            # The service holds the conversation: send its cursor and what it has not seen.
            unsent = thread.model_copy(update={"messages": thread.unsent})
            return TurnInput(version=2, thread=unsent, **common)
        mode = options.thread_mode
        inline = (
            bool(thread.messages)
            and thread.base is None
            and (
                mode == "inline"
                or (
                    mode == "auto"
                    and upto is None
                    and ledger.thread_bytes <= options.inline_thread_bytes
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
        fast = self._setup.options.fast
        start = thread.length
        ref = ThreadRef(id=thread.id, version=start, last_id=thread.last_id)
        if pending:
            self._ledger.append(pending)
            self.logged = pending
        common["new_messages"] = pending if fast else []
        new_last_id = None
        if pending and not fast:
            # A local activity gets them inline; a turn this process runs, by hand.
            new_last_id = pending[-1].id
            if not workflow.unsafe.is_replaying():
                HANDOFF.offer(thread.id, start, pending)
        return TurnInput(
            version=3,
            thread_ref=ref,
            view=thread.view,
            new_count=len(pending),
            compaction=self._setup.options.compaction,
            new_last_id=new_last_id,
            **common,
        )


class TurnCalls:
    """Takes turns as activities; a failed turn fails the run, a stopped one is discarded."""

    def __init__(self, options: RunOptions, ledger: RunLedger, stopped: Callable[[], bool]) -> None:
        self._options = options
        self._ledger = ledger
        self._stopped = stopped

    async def take_stoppable(self, input: TurnInput, summary: str) -> TurnOutput | None:
        """The turn's output, or ``None`` if the run was stopped while it ran."""
        task = asyncio.ensure_future(self.take(input, summary))
        try:
            await workflow.wait_condition(lambda: task.done() or self._stopped())
        except asyncio.CancelledError:
            # The workflow itself is cancelled: cancel the turn's activity with it.
            await cancelled(task)
            raise
        if task.done():
            if self._stopped() and not task.cancelled() and task.exception():
                return None  # failed as it was being stopped: the stop wins
            return task.result()
        await cancelled(task)  # the turn ends cancelled; nothing of it is kept
        return None

    async def take(self, input: TurnInput, summary: str, *, agent: str | None = None) -> TurnOutput:
        ledger = self._ledger
        try:
            # A local activity cannot page in a thread held by the session workflow.
            thread = ledger.thread
            if self._options.fast and (thread.base is None or thread.view is not None):
                return await self._take_local(input, summary)
            return await self._activity(input, summary)
        except (asyncio.CancelledError, ActivityError, ApplicationError) as e:
            if is_cancelled_exception(e) or self._stopped():
                ledger.set_execution(ledger.execution.with_status(AgentStatus.CANCELLED))
                raise
            kind, message = turn_failure(e)
            ledger.fail(
                kind, f"Turn {input.turn} of agent {agent or ledger.agent!r} failed: {message}"
            )

    async def _take_local(self, input: TurnInput, summary: str) -> TurnOutput:
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
            thread = self._ledger.thread
            inline = thread.model_copy(update={"messages": thread.messages[: ref.version]})
            return await self._local_activity(input.model_copy(update={"thread": inline}), summary)

    async def _activity(self, input: TurnInput, summary: str) -> TurnOutput:
        return await workflow.execute_activity(
            TURN_ACTIVITY,
            input,
            result_type=TurnOutput,
            task_queue=self._options.task_queue,
            start_to_close_timeout=self._options.turn_timeout,
            heartbeat_timeout=self._options.heartbeat_timeout,
            retry_policy=turn_retry_policy(self._options),
            summary=summary,
        )

    async def _local_activity(self, input: TurnInput, summary: str) -> TurnOutput:
        return await workflow.execute_local_activity(
            TURN_ACTIVITY,
            input,
            result_type=TurnOutput,
            start_to_close_timeout=self._options.turn_timeout,
            retry_policy=turn_retry_policy(self._options),
            summary=summary,
        )
