"""Runs against a real Temporal dev server with an in-process worker."""

from __future__ import annotations

from datetime import timedelta

import pytest
from temporalio.client import WorkflowExecutionStatus

from ratchet.agents import (
    Agent,
    ModelResponse,
    Result,
    RunContext,
    ScriptedModel,
    ToolCallingAgent,
    tool,
)
from ratchet.client import AgentClient, AgentStatus
from ratchet.errors import InvalidInputError, ModelError, RunFailedError
from ratchet.types import Message
from ratchet.wire import RunOptions
from ratchet.worker import build_worker

from ..history import attempts, summary, turn_activities
from ..hitl_agents import HEARTBEAT_WITH_MARGIN


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    return {"oslo": "snow", "lisbon": "sun"}.get(city.lower(), "unknown")


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def weather_agent(script) -> ToolCallingAgent:
    return ToolCallingAgent(ScriptedModel(script), [lookup, add])


FAST = RunOptions(initial_retry_interval=timedelta(milliseconds=50))


async def test_run_completes_with_one_activity_per_turn(agent_client: AgentClient):
    script = [
        ScriptedModel.call("lookup", city="Oslo"),
        ScriptedModel.calls(("lookup", {"city": "Lisbon"}), ("add", {"a": 2, "b": 3})),
        "Lisbon is sunnier.",
    ]
    async with build_worker(agent_client, {"weather": lambda: weather_agent(script)}):
        handle = await agent_client.start_run("weather", "Oslo or Lisbon?")
        result = await handle.result()
        state = await handle.record()

    assert result.output == "Lisbon is sunnier."
    assert result.status == AgentStatus.COMPLETED
    assert result.turns == 3
    assert result.usage.requests == 3
    assert handle.id.startswith("run-weather-")
    scheduled = await turn_activities(handle)
    assert [summary(e) for e in scheduled] == [
        'turn 1 · "Oslo or Lisbon?"',
        'turn 2 · after lookup(city="Oslo")',
        'turn 3 · after lookup(city="Lisbon"), add(a=2, b=3)',
    ]
    thread = state.session.thread.messages
    assert [m.role for m in thread] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    assert [m.content for m in thread if m.role == "tool"] == ["snow", "sun", "5"]
    assert state.execution is not None and state.execution.step_count == 3
    assert [s.tool_calls for s in state.execution.step_results] == [
        ['lookup(city="Oslo")'],
        ['lookup(city="Lisbon")', "add(a=2, b=3)"],
        [],
    ]


async def test_cancelling_a_finished_run_leaves_it_completed(agent_client: AgentClient):
    async with build_worker(agent_client, {"weather": lambda: weather_agent(["Sunny."])}):
        handle = await agent_client.start_run("weather", "Oslo?")
        await handle.result()
        await handle.cancel()  # raised a raw RPCError ("already completed") before

    description = await handle.workflow.describe()
    assert description.status == WorkflowExecutionStatus.COMPLETED


async def test_model_sees_tool_errors_for_bad_arguments_and_unknown_tools(
    agent_client: AgentClient,
):
    seen: list[Message] = []

    def script(messages, context: RunContext):
        seen[:] = list(messages)
        turn = sum(m.role == "assistant" for m in messages)
        return [
            ScriptedModel.raw_call("add", "{not json"),
            ScriptedModel.call("add", a="two", b=3),
            ScriptedModel.call("teleport", to="Mars"),
            "I could not do it.",
        ][turn]

    agent = ToolCallingAgent(ScriptedModel(script), [add])
    async with build_worker(agent_client, {"calc": agent}):
        result = await agent_client.run("calc", "add two and three", options=FAST)

    assert result.output == "I could not do it."
    errors = [m for m in seen if m.role == "tool"]
    assert all(m.is_error for m in errors)
    assert "not valid JSON" in errors[0].text
    assert "invalid arguments for add: a: Input should be a valid integer" in errors[1].text
    assert "no tool named 'teleport'" in errors[2].text and "Available tools: add" in errors[2].text


async def test_unknown_agent_fails_the_run_with_the_registered_names(agent_client: AgentClient):
    async with build_worker(agent_client, {"weather": weather_agent(["hi"])}):
        handle = await agent_client.start_run("wether", "hello")
        with pytest.raises(RunFailedError) as failure:
            await handle.result()
    assert 'Agent "wether" is not registered' in str(failure.value)
    assert "registered: weather" in str(failure.value)
    assert failure.value.error_type == "AgentNotFoundError"
    description = await handle.workflow.describe()
    assert description.status == WorkflowExecutionStatus.FAILED
    assert await attempts(handle) == [1]


async def test_empty_prompt_is_refused_before_anything_starts(agent_client: AgentClient):
    for prompt in ["", "   ", []]:
        with pytest.raises(InvalidInputError, match="prompt is empty"):
            await agent_client.start_run("weather", prompt)


async def test_non_retryable_model_error_fails_the_run_with_its_message(agent_client: AgentClient):
    error = ModelError("The model service answered 401: bad key", retryable=False, status=401)
    async with build_worker(agent_client, {"weather": weather_agent([error])}):
        handle = await agent_client.start_run("weather", "hi", options=FAST)
        with pytest.raises(RunFailedError, match="answered 401: bad key") as failure:
            await handle.result()
    assert failure.value.error_type == "ModelError"
    assert await attempts(handle) == [1]


async def test_retryable_model_error_is_retried_by_temporal(agent_client: AgentClient):
    def script(messages, context: RunContext):
        if context.attempt < 3:
            raise ModelError("429 slow down", retryable=True, status=429, retry_after=0.05)
        return "recovered"

    async with build_worker(agent_client, {"weather": weather_agent(script)}):
        handle = await agent_client.start_run("weather", "hi", options=FAST)
        result = await handle.result()
    assert result.output == "recovered"
    assert await attempts(handle) == [3]


async def test_max_turns_fails_the_run_naming_the_limit(agent_client: AgentClient):
    forever = lambda messages, context: ScriptedModel.call("add", a=1, b=1)  # noqa: E731
    async with build_worker(agent_client, {"loop": weather_agent(forever)}):
        handle = await agent_client.start_run("loop", "go", options=RunOptions(max_turns=3))
        with pytest.raises(RunFailedError, match="max_turns=3") as failure:
            await handle.result()
        state = await handle.record()
    assert failure.value.error_type == "MaxTurnsExceededError"
    assert len(await turn_activities(handle)) == 3
    assert state.execution is not None and state.execution.status == AgentStatus.FAILED


async def test_script_running_out_fails_the_run_instead_of_retrying(agent_client: AgentClient):
    async with build_worker(
        agent_client, {"weather": weather_agent([ScriptedModel.call("add", a=1, b=2)])}
    ):
        handle = await agent_client.start_run("weather", "hi", options=FAST)
        with pytest.raises(RunFailedError, match="has 1 replies but was asked for reply 2"):
            await handle.result()
    assert await attempts(handle) == [1, 1]


async def test_a_session_continues_in_a_new_run(agent_client: AgentClient):
    agent = weather_agent(["first answer", "second answer"])
    async with build_worker(agent_client, {"weather": agent}):
        first = await agent_client.start_run("weather", "one")
        await first.result()
        session = (await first.record()).session
        second = await agent_client.start_run("weather", "two", session=session)
        result = await second.result()
        state = await second.record()
    assert result.output == "second answer"
    assert result.session_id == session.info.id
    assert [m.content for m in state.session.thread.messages] == [
        "one",
        "first answer",
        "two",
        "second answer",
    ]


async def test_cancelled_run_stops_its_turn(agent_client: AgentClient):
    import asyncio

    started = asyncio.Event()

    @tool
    async def wait_forever() -> str:
        """Never finishes."""
        started.set()
        await asyncio.Event().wait()
        return "unreachable"

    agent = ToolCallingAgent(ScriptedModel([ScriptedModel.call("wait_forever")]), [wait_forever])
    async with build_worker(agent_client, {"slow": agent}):
        handle = await agent_client.start_run(
            "slow", "go", options=RunOptions(heartbeat_timeout=HEARTBEAT_WITH_MARGIN)
        )
        await started.wait()
        await handle.cancel()
        with pytest.raises(RunFailedError, match="(?i)cancel"):
            await handle.result()
        description = await handle.workflow.describe()
    assert description.status == WorkflowExecutionStatus.CANCELED


async def test_a_retried_turn_skips_the_model_call_an_earlier_attempt_finished(
    agent_client: AgentClient,
):
    model = ScriptedModel(["the answer"])

    class CrashesAfterTheModelCall(Agent):
        async def run(self, messages, thread, context: RunContext) -> Result:
            await thread.on_new_messages(messages)
            reply = await context.once(
                "model", lambda: model.create(thread.messages, [], context), ModelResponse
            )
            if context.attempt == 1:
                raise RuntimeError("worker lost the turn after the model answered")
            await thread.on_new_messages([reply.message])
            return Result(final_response=reply.message, usage=reply.usage)

    async with build_worker(agent_client, {"crashy": CrashesAfterTheModelCall()}):
        handle = await agent_client.start_run("crashy", "go", options=FAST)
        result = await handle.result()
    assert result.output == "the answer"
    # Attempt 2 took the reply from attempt 1's heartbeat details, not a second call.
    assert model.requests == 1
    assert await attempts(handle) == [2]
