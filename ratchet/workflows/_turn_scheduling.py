"""Turns: what a turn's activity is given, and taking it (one activity per turn,
a local one in fast mode), so that a stop discards the turn in flight."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from ratchet._handoff import HANDOFF
    from ratchet.types import AgentStatus, Message, id_tag
    from ratchet.wire import (
        THREAD_NOT_CACHED,
        TURN_ACTIVITY,
        RunOptions,
        ThreadRef,
        TurnInput,
        TurnOutput,
    )

    from ._failures import cancelled, turn_failure
    from ._ledger import RunLedger
    from ._patches import (
        RUN_LABEL_ON_TURN_EVENTS,
        THROTTLES_NOT_ATTEMPTS,
        patched,
        replayed_patch,
    )
    from ._presets import retry_policy
    from ._state_commits import AgentStateKeeper
    from ._turn_fairness import turn_priority


@dataclass(frozen=True)
class TurnSetup:
    """How this run's turns are given their thread and state."""

    options: RunOptions
    live_events: bool
    """Turns send their live events to the workflow's event stream."""
    run_label: str = ""
    """The id the run's events carry when it is not the workflow's (a session's run)."""


class TurnInputs:
    """Builds each turn's ``TurnInput`` from the ledger and the agent's state."""

    def __init__(self, setup: TurnSetup, ledger: RunLedger, states: AgentStateKeeper) -> None:
        self._setup = setup
        self._ledger = ledger
        self._states = states
        self.logged: list[Message] = []
        """The new messages the last turn appended to the log already."""

    def build(self, turn: int, pending: list[Message]) -> TurnInput:
        """The input of the run's turn ``turn``, whose new messages are ``pending``.

        They join the log first (they are in history already: in the run's input,
        the send that brought them, or the results the workflow settled), and the
        turn names them by position; a local activity (fast mode) gets them inline,
        a turn this process runs gets them by hand (``HANDOFF``)."""
        options, ledger = self._setup.options, self._ledger
        thread = ledger.thread
        ref = ThreadRef(
            id=thread.id,
            length=thread.length,
            last_tag=id_tag(thread.last_id) if thread.last_id else None,
            kind=thread.kind,
            cursor=thread.cursor,
        )
        if pending:
            ledger.append(pending)
            self.logged = pending
            if not options.fast and not workflow.unsafe.is_replaying():
                HANDOFF.offer(thread.id, ref.length, pending)
        # A local activity (fast mode) holds the workflow task its signals would need.
        events = self._setup.live_events and not options.fast
        return TurnInput(
            agent=ledger.agent,
            execution_id=ledger.execution.execution_id,
            run_id=self._run_label() if events else "",
            turn=turn,
            thread=ref,
            view=thread.view,
            new_count=len(pending),
            new_messages=pending if options.fast else [],
            new_last_tag=id_tag(pending[-1].id) if pending else None,
            events=events,
            compaction=options.compaction,
            fit_window=options.fit_window,
            prompt=thread.prompt,
            tool_interceptor=options.tool_interceptor,
            client_tools=options.client_tools,
            conflicts=self._states.undelivered,
            shared=self._states.shared_entries() if self._states.shared else [],
            **self._states.turn_input(inline=options.fast),
        )

    def _run_label(self) -> str:
        label = self._setup.run_label
        return label if label and patched(RUN_LABEL_ON_TURN_EVENTS) else ""


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

    async def take(self, input: TurnInput, summary: str) -> TurnOutput:
        ledger = self._ledger
        try:
            if self._options.fast:
                return await self._take_local(input, summary)
            return await self._activity(input, summary)
        except (asyncio.CancelledError, ActivityError, ApplicationError) as e:
            if is_cancelled_exception(e) or self._stopped():
                ledger.set_execution(ledger.execution.with_status(AgentStatus.CANCELLED))
                raise
            kind, message = turn_failure(e)
            ledger.fail(kind, f"Turn {input.turn} of agent {input.agent!r} failed: {message}")

    async def _take_local(self, input: TurnInput, summary: str) -> TurnOutput:
        """Fast mode. A local activity cannot page a thread in from its own workflow
        (the workflow is busy waiting for it), so a worker that lacks part of the log
        says so and the turn is taken again as a regular activity, which can."""
        try:
            return await self._local_activity(input, summary)
        except (ActivityError, ApplicationError) as e:
            # A local activity's failure may arrive unwrapped.
            cause = e.cause if isinstance(e, ActivityError) else e
            if not (isinstance(cause, ApplicationError) and cause.type == THREAD_NOT_CACHED):
                raise
            # The new messages are in history already: the regular turn pages them in.
            return await self._activity(input.model_copy(update={"new_messages": []}), summary)

    async def _activity(self, input: TurnInput, summary: str) -> TurnOutput:
        replayed_patch(THROTTLES_NOT_ATTEMPTS)
        # The turn counts its real failures itself: throttled attempts are not.
        limit = retry_policy(self._options).maximum_attempts
        input = input.model_copy(update={"max_attempts": limit})
        retries = retry_policy(self._options, max_attempts=0)
        return await workflow.execute_activity(
            TURN_ACTIVITY,
            input,
            result_type=TurnOutput,
            task_queue=self._options.task_queue,
            start_to_close_timeout=self._options.turn_timeout,
            heartbeat_timeout=self._options.heartbeat_timeout,
            retry_policy=retries,
            summary=summary,
            priority=turn_priority(self._options, input.agent),
        )

    async def _local_activity(self, input: TurnInput, summary: str) -> TurnOutput:
        return await workflow.execute_local_activity(
            TURN_ACTIVITY,
            input,
            result_type=TurnOutput,
            start_to_close_timeout=self._options.turn_timeout,
            retry_policy=retry_policy(self._options),
            summary=summary,
        )
