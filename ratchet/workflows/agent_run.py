"""AgentRunWorkflow: one agent run, one workflow; one turn, one activity."""

from __future__ import annotations

from collections import deque

from pydantic import BaseModel, Field
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ratchet.agents.messages import Message
    from ratchet.agents.state import AgentSession, AgentState, ExecutionState, ThreadData
    from ratchet.agents.state_context import StateChanged

    from .presets import RunOptions
    from .runner import AgentRunner, RunResult


STATE_EVENTS_KEPT = 100
CONTINUE_AS_NEW_THREAD_LIMIT = 1536 * 1024
"""Largest thread carried into a new workflow run (a payload may hold 2 MB)."""


class RunInput(BaseModel):
    """The workflow's input. ``session`` continues an earlier conversation;
    ``execution`` (with ``session``: model B) continues a run in progress."""

    agent: str
    messages: list[Message]
    session: AgentSession | None = None
    options: RunOptions = Field(default_factory=RunOptions)
    execution: ExecutionState | None = None


@workflow.defn(name="AgentRunWorkflow")
class AgentRunWorkflow:
    """Runs an agent until it answers. History is the checkpoint log: a crash
    resumes at the last completed turn and no completed turn runs again."""

    @workflow.init
    def __init__(self, input: RunInput) -> None:
        self._runner = AgentRunner(input.agent, session=input.session, options=input.options)
        self._state_events: deque[StateChanged] = deque(maxlen=STATE_EVENTS_KEPT)
        self._runner.state_hooks.append(self._state_events.append)

    @workflow.run
    async def run(self, input: RunInput) -> RunResult:
        self._runner.between_turns = self._continue_as_new_if_due
        return await self._runner.run(input.messages, resume=input.execution)

    async def _continue_as_new_if_due(self) -> None:
        """Between turns, start a fresh workflow run carrying session and execution
        (model B) when the history is getting long; the run goes on where it was."""
        runner = self._runner
        limit = runner.options.continue_as_new_after_turns
        due = workflow.info().is_continue_as_new_suggested() or (
            limit is not None and runner.turns_this_run >= limit
        )
        if not due:
            return
        if runner.thread_bytes > CONTINUE_AS_NEW_THREAD_LIMIT:
            # The new run's input would carry a thread too large for one payload; keep
            # going in this run (set RunOptions.compaction to keep threads small).
            workflow.logger.warning(
                "Not continuing as new: the thread is %d bytes, over %d; set compaction.",
                runner.thread_bytes,
                CONTINUE_AS_NEW_THREAD_LIMIT,
            )
            return
        await workflow.wait_condition(workflow.all_handlers_finished)
        workflow.continue_as_new(
            RunInput(
                agent=runner.agent,
                messages=[],
                session=runner.state.session,
                options=runner.options,
                execution=runner.state.execution,
            )
        )

    @workflow.query
    def state(self) -> AgentState:
        """Session and execution (full serialisation)."""
        return self._runner.state

    @workflow.query
    def state_changes(self) -> list[StateChanged]:
        """The latest committed state changes of this workflow run, oldest first."""
        return list(self._state_events)

    @workflow.query
    def thread(self) -> ThreadData:
        return self._runner.state.session.thread

    @workflow.query
    def execution(self) -> ExecutionState | None:
        return self._runner.state.execution
