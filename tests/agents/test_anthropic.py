"""AnthropicModel against a real local HTTP server speaking the Messages API."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import timedelta

import anthropic
import pytest

from ratchet.agents import ModelPrice, RunContext, ToolCallingAgent, tool
from ratchet.agents.models import AnthropicModel
from ratchet.client import AgentClient
from ratchet.errors import ConfigurationError, ModelError, RunFailedError
from ratchet.testing import AnthropicServer
from ratchet.types import Message, ToolCall, Usage
from ratchet.wire import RunOptions, SessionOptions
from ratchet.worker import build_worker

from ..history import attempts

FAST = RunOptions(initial_retry_interval=timedelta(milliseconds=50))


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    return {"oslo": "snow"}.get(city.lower(), "unknown")


LOOKUP_TOOL = {
    "name": "lookup",
    "description": "The weather in a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"title": "City", "type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
}
# How one lookup(city="Oslo") round looks on the wire: the tool use and its result.
OSLO_TOOL_ROUND = [
    {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"city": "Oslo"}}
        ],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "snow"}],
    },
]


@pytest.fixture
def server() -> Iterator[AnthropicServer]:
    with AnthropicServer() as server:
        yield server


def claude(server: AnthropicServer, **options) -> AnthropicModel:
    return AnthropicModel("claude-test", base_url=server.base_url, api_key="test-key", **options)


@pytest.fixture
async def model(server: AnthropicServer) -> AsyncIterator[AnthropicModel]:
    model = claude(server)
    yield model
    await model.client.close()


async def ask(model: AnthropicModel) -> ModelError:
    with pytest.raises(ModelError) as failure:
        await model.create([Message.user("hi")], [lookup], RunContext())
    return failure.value


async def test_system_prompt_tool_round_and_usage_go_over_the_wire(server, model):
    server.message("It snows in Oslo.", input_tokens=42, output_tokens=7)
    call = ToolCall(id="toolu_1", name="lookup", arguments='{"city": "Oslo"}')
    messages = [
        Message.system("Be brief."),
        Message.user("Weather in Oslo?"),
        Message.assistant(None, [call]),
        Message.tool(call, "snow"),
    ]

    response = await model.create(messages, [lookup], RunContext())

    assert response.message.content == "It snows in Oslo." and response.message.tool_calls == []
    assert response.usage == Usage(requests=1, input_tokens=42, output_tokens=7)
    assert response.model == "claude-test"
    (request,) = server.requests
    assert request.path == "/v1/messages"
    assert request.headers["authorization"] == "Bearer test-key"
    assert request.body["system"] == "Be brief."
    assert request.body["max_tokens"] == 4096
    assert request.body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]},
        *OSLO_TOOL_ROUND,
    ]
    assert request.body["tools"] == [LOOKUP_TOOL]


async def test_a_run_calls_tools_and_prices_its_usage(
    agent_client: AgentClient, server: AnthropicServer
):
    server.message(None, ("toolu_1", "lookup", {"city": "Oslo"}), input_tokens=20, output_tokens=3)
    server.message("Snow in Oslo.", input_tokens=30, output_tokens=4)
    model = claude(server, price=ModelPrice(input_per_million=3, output_per_million=15))

    async with build_worker(agent_client, {"claude": ToolCallingAgent(model, [lookup])}):
        result = await agent_client.run("claude", "Weather in Oslo?", options=FAST)
    await model.client.close()

    assert result.output == "Snow in Oslo."
    assert result.usage.input_tokens == 50 and result.usage.output_tokens == 7
    assert result.usage.cost_usd == pytest.approx((50 * 3 + 7 * 15) / 1_000_000)
    first, second = server.requests
    assert second.body["messages"][1:] == OSLO_TOOL_ROUND


async def test_a_streamed_reply_reaches_watchers_as_text_deltas(
    agent_client: AgentClient, server: AnthropicServer
):
    server.message(None, ("toolu_1", "lookup", {"city": "Oslo"}), stream=True)
    server.message("Snow in Oslo today.", input_tokens=30, output_tokens=4, stream=True)
    model = claude(server, stream=True)

    async with build_worker(agent_client, {"claude": ToolCallingAgent(model, [lookup])}):
        handle = await agent_client.start_run("claude", "Weather in Oslo?", options=FAST)
        seen = [event async for event in handle.events()]
        result = await handle.result()
    await model.client.close()

    assert result.output == "Snow in Oslo today."
    assert result.usage.input_tokens == 40 and result.usage.output_tokens == 9
    assert "".join(e.text or "" for e in seen if e.kind == "text_delta") == result.output
    first, second = server.requests
    assert first.body["stream"] is True
    assert second.body["messages"][1:] == OSLO_TOOL_ROUND


@pytest.mark.parametrize("status", [429, 529, 500])
async def test_rate_limits_and_overload_are_retryable_with_the_servers_delay(server, model, status):
    server.error(status, "Overloaded.", type="overloaded_error", headers={"retry-after": "3"})

    error = await ask(model)

    assert error.retryable is True and error.status == status and error.retry_after == 3
    assert "Overloaded." in str(error)
    assert len(server.requests) == 1, "the anthropic client must not retry on its own"


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (400, "check the model name, messages and tool schemas"),
        (401, "check ANTHROPIC_API_KEY"),
        (403, "may not use this model"),
        (404, "check the model name"),
    ],
)
async def test_client_errors_are_not_retryable_and_say_what_to_fix(server, model, status, hint):
    server.error(status, "Something is wrong.", type="invalid_request_error")

    error = await ask(model)

    assert error.retryable is False and error.status == status
    assert "Something is wrong." in str(error) and hint in str(error)


async def test_a_run_fails_after_one_attempt_when_the_key_is_refused(
    agent_client: AgentClient, server: AnthropicServer
):
    server.error(401, "invalid x-api-key", type="authentication_error")
    model = claude(server)

    async with build_worker(agent_client, {"claude": ToolCallingAgent(model, [lookup])}):
        handle = await agent_client.start_run("claude", "hi", options=FAST)
        with pytest.raises(RunFailedError, match="answered 401: invalid x-api-key"):
            await handle.result()
    await model.client.close()

    assert await attempts(handle) == [1]


@pytest.mark.parametrize("session", [False, True], ids=["run", "session"])
async def test_a_claude_agent_without_tools_continues_a_thread_with_tool_blocks(
    agent_client: AgentClient, server: AnthropicServer, session: bool
):
    """After a handoff to an agent with no tools, the earlier tool_use and tool_result
    blocks go with those tools described and tool_choice none: the Messages API (and
    AnthropicServer) refuse tool blocks in a request without tools."""
    server.message(None, ("toolu_1", "lookup", {"city": "Oslo"}))
    server.message(None, ("toolu_2", "transfer_to_writer", {}))
    server.message("A poem about snow in Oslo.")
    model = claude(server)
    agents = {
        "weather": ToolCallingAgent(model, [lookup], handoffs=["writer"]),
        "writer": ToolCallingAgent(model, instructions="Write poems."),
    }
    async with build_worker(agent_client, agents):
        if session:
            handle = await agent_client.start_session("weather", options=SessionOptions(run=FAST))
            result = await handle.send("A poem on Oslo's weather")
            await handle.close()
        else:
            result = await agent_client.run("weather", "A poem on Oslo's weather", options=FAST)
    await model.client.close()

    assert result.output == "A poem about snow in Oslo."
    assert server.refused == 0
    last = server.requests[-1].body
    assert [t["name"] for t in last["tools"]] == ["lookup", "transfer_to_writer"]
    assert last["tool_choice"] == {"type": "none"}
    assert last["messages"][1:3] == OSLO_TOOL_ROUND  # the blocks went as they were


async def test_the_test_server_refuses_tool_blocks_without_tools(server: AnthropicServer):
    model = claude(server)
    with pytest.raises(anthropic.BadRequestError, match="must define tools"):
        await model.client.messages.create(
            model="claude-test", max_tokens=10, messages=OSLO_TOOL_ROUND[:1]
        )
    await model.client.close()
    assert server.refused == 1


async def test_a_model_without_an_api_key_is_a_configuration_error_not_a_retry(monkeypatch):
    """The SDK raised TypeError at the first request, which turns retried for minutes."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    model = AnthropicModel("claude-test", base_url="http://127.0.0.1:9")
    with pytest.raises(ConfigurationError, match="set ANTHROPIC_API_KEY"):
        await model.create([Message.user("hi")], [], RunContext())
