"""AgentRunWorkflow: one agent run, one workflow; one turn, one activity."""

from __future__ import annotations

from pydantic import BaseModel, Field
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ratchet.agents.messages import Message
    from ratchet.agents.state import AgentSession, AgentState, ExecutionState, ThreadData

    from .presets import RunOptions
    from .runner import AgentRunner, RunResult


class RunInput(BaseModel):
    """The workflow's input. ``session`` continues an earlier conversation."""

    agent: str
    messages: list[Message]
    session: AgentSession | None = None
    options: RunOptions = Field(default_factory=RunOptions)


@workflow.defn(name="AgentRunWorkflow")
class AgentRunWorkflow:
    """Runs an agent until it answers. History is the checkpoint log: a crash
    resumes at the last completed turn and no completed turn runs again."""

    @workflow.init
    def __init__(self, input: RunInput) -> None:
        self._runner = AgentRunner(input.agent, session=input.session, options=input.options)

    @workflow.run
    async def run(self, input: RunInput) -> RunResult:
        return await self._runner.run(input.messages)

    @workflow.query
    def state(self) -> AgentState:
        """Session and execution (full serialisation)."""
        return self._runner.state

    @workflow.query
    def thread(self) -> ThreadData:
        return self._runner.state.session.thread

    @workflow.query
    def execution(self) -> ExecutionState | None:
        return self._runner.state.execution
