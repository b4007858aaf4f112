"""A provider's throttling (429, 529) is a wait, not a failure: it uses up none of
the run's ``max_attempts``, and the turn's records say it was throttled. The models
talk real HTTP to local servers speaking the providers' APIs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import timedelta

import pytest
from temporalio.api.enums.v1 import EventType

from ratchet.agents import Agent, Result, RunContext, Thread, ToolCallingAgent
from ratchet.agents.models import AnthropicModel, OpenAIChatModel
from ratchet.client import AgentClient
from ratchet.errors import ModelError, RunFailedError
from ratchet.testing import AnthropicServer, OpenAIServer
from ratchet.types import Message
from ratchet.wire import RunOptions
from ratchet.worker import build_worker

from ..history import attempts, events, of_type

TWO = RunOptions(max_attempts=2, initial_retry_interval=timedelta(milliseconds=50))
SLOW_DOWN = {"retry-after": "0.1"}


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


def chat_agent(server: OpenAIServer) -> ToolCallingAgent:
    return ToolCallingAgent(OpenAIChatModel("gpt-test", base_url=server.base_url, api_key="k"), [])


def throttle(server: OpenAIServer) -> None:
    server.error(429, "Rate limit reached.", type="rate_limit_error", headers=SLOW_DOWN)


async def test_throttled_attempts_do_not_use_up_max_attempts_and_show_as_throttled(
    agent_client: AgentClient, server: OpenAIServer
):
    for _ in range(3):
        throttle(server)
    server.text("answer")
    async with build_worker(agent_client, {"oa": chat_agent(server)}):
        handle = await agent_client.start_run("oa", "hi", options=TWO)
        result = await handle.result()
        (turn,) = await handle.turns()
    assert result.output == "answer"
    assert len(server.requests) == 4
    assert [(a.attempt, a.throttled, a.failure) for a in turn.attempts] == [
        (1, "429, retry-after 0.1s", None),
        (2, "429, retry-after 0.1s", None),
        (3, "429, retry-after 0.1s", None),
        (4, None, None),
    ]


async def test_real_failures_fail_the_turn_at_max_attempts_with_throttles_between(
    agent_client: AgentClient, server: OpenAIServer
):
    server.error(500, "The server had an error.")
    throttle(server)
    throttle(server)
    server.error(500, "The server had an error again.")
    server.text("never sent")
    async with build_worker(agent_client, {"oa": chat_agent(server)}):
        handle = await agent_client.start_run("oa", "hi", options=TWO)
        with pytest.raises(RunFailedError, match="had an error again") as failure:
            await handle.result()
        (turn,) = await handle.turns()
    assert "max_attempts=2" in str(failure.value)
    assert failure.value.error_type == "ModelError"
    assert len(server.requests) == 4
    assert turn.status == "failed"
    assert [a.attempt for a in turn.attempts][-1] == 4


async def test_a_turn_throttled_longer_than_its_turn_timeout_fails_saying_so(
    agent_client: AgentClient, server: OpenAIServer
):
    for _ in range(5):
        server.error(429, "Rate limit reached.", headers={"retry-after": "1.5"})
    options = RunOptions(turn_timeout=timedelta(seconds=2), heartbeat_timeout=timedelta(seconds=1))
    async with build_worker(agent_client, {"oa": chat_agent(server)}):
        handle = await agent_client.start_run("oa", "hi", options=options)
        with pytest.raises(
            RunFailedError,
            match=r"throttled turn 1 of agent 'oa' 2 time\(s\), for 3.\ds in all .* \(2s\)",
        ):
            await handle.result()
        (turn,) = await handle.turns()
    assert len(server.requests) == 2
    assert [a.throttled for a in turn.attempts] == ["429, retry-after 1.5s", None]
    assert "throttled turn 1" in (turn.attempts[-1].failure or "")  # the attempt that ended it


class ThrottledThenStuck(Agent):
    """Throttled at its first attempt; every later attempt hangs until it times out."""

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        if context.attempt == 1:
            raise ModelError("429 slow down", retryable=True, status=429, retry_after=0.05)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


async def test_attempts_that_time_out_are_real_failures_and_end_the_turn_at_max_attempts(
    agent_client: AgentClient,
):
    options = RunOptions(
        max_attempts=2,
        turn_timeout=timedelta(seconds=2),
        initial_retry_interval=timedelta(milliseconds=50),
    )
    async with build_worker(agent_client, {"stuck": ThrottledThenStuck()}):
        handle = await agent_client.start_run("stuck", "hi", options=options)
        with pytest.raises(RunFailedError, match=r"failed 2 attempt\(s\) \(max_attempts=2\)"):
            await handle.result()
    # Attempt 1 throttled, 2 and 3 timed out; 4 saw the limit reached and did not run.
    assert await attempts(handle) == [4]


async def test_anthropic_overload_529_is_a_throttle_too(agent_client: AgentClient):
    server = AnthropicServer()
    with server:
        server.error(529, "Overloaded.", type="overloaded_error", headers=SLOW_DOWN)
        server.error(529, "Overloaded.", type="overloaded_error", headers=SLOW_DOWN)
        server.message("answer")
        model = AnthropicModel("claude-test", base_url=server.base_url, api_key="k")
        options = RunOptions(max_attempts=1)
        async with build_worker(agent_client, {"an": ToolCallingAgent(model, [])}):
            handle = await agent_client.start_run("an", "hi", options=options)
            result = await handle.result()
            (turn,) = await handle.turns()
    assert result.output == "answer"
    assert [a.throttled for a in turn.attempts] == ["529, retry-after 0.1s"] * 2 + [None]


async def test_a_throttled_attempts_failure_is_small_and_named_in_its_record(
    agent_client: AgentClient, server: OpenAIServer
):
    """The server replaces an activity failure over its size limit (4 KB) with
    "Failure exceeds size limit.": a throttle's failure must stay well under it."""
    message = "Rate limit reached for requests per minute (RPM): Limit 3. " * 4
    server.error(429, message, type="requests", headers=SLOW_DOWN)
    server.text("answer")
    async with build_worker(agent_client, {"oa": chat_agent(server)}):
        handle = await agent_client.start_run("oa", "hi", options=TWO)
        await handle.result()
        (turn,) = await handle.turns()
    (started,) = of_type(await events(handle), EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED)
    failure = started.activity_task_started_event_attributes.last_failure
    assert failure.message.startswith("throttled (429, retry-after 0.1s): ")
    assert not failure.HasField("cause")
    assert failure.ByteSize() < 2048
    assert turn.attempts[0].throttled == "429, retry-after 0.1s"
    assert turn.attempts[0].failure is None


async def test_a_failure_over_the_servers_size_limit_is_named_in_the_turns_record(
    agent_client: AgentClient, server: OpenAIServer
):
    server.error(500, "The server had an error. " * 60)
    server.text("answer")
    async with build_worker(agent_client, {"oa": chat_agent(server)}):
        handle = await agent_client.start_run("oa", "hi", options=TWO)
        await handle.result()
        (turn,) = await handle.turns()
    (started,) = of_type(await events(handle), EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED)
    wrapped = started.activity_task_started_event_attributes.last_failure
    assert wrapped.message == "Failure exceeds size limit."  # the server's, over 4 KB
    failure = turn.attempts[0].failure or ""
    assert failure.startswith("The model service answered 500: The server had an error.")


async def test_openai_insufficient_quota_is_a_failure_not_a_throttle(
    agent_client: AgentClient, server: OpenAIServer
):
    body = {"error": {"message": "You exceeded your current quota.", "code": "insufficient_quota"}}
    server.raw(json.dumps(body), status=429)
    server.text("never sent")
    async with build_worker(agent_client, {"oa": chat_agent(server)}):
        handle = await agent_client.start_run("oa", "hi", options=TWO)
        with pytest.raises(RunFailedError, match="insufficient_quota: .* billing"):
            await handle.result()
    assert len(server.requests) == 1
