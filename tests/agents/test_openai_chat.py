"""OpenAIChatModel against a real local HTTP server speaking the OpenAI API."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta

import pytest

from ratchet.agents import OpenAIChatModel, RunContext, ToolCallingAgent, tool
from ratchet.client import AgentClient
from ratchet.errors import ModelError, RunFailedError
from ratchet.testing import OpenAIServer
from ratchet.types import Message, ToolCall, Usage
from ratchet.wire import RunOptions
from ratchet.worker import build_worker

from ..history import attempts

FAST = RunOptions(initial_retry_interval=timedelta(milliseconds=50))


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    return {"oslo": "snow"}.get(city.lower(), "unknown")


LOOKUP_SPEC = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"title": "City", "type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


def chat_model(server: OpenAIServer, **options) -> OpenAIChatModel:
    return OpenAIChatModel("gpt-test", base_url=server.base_url, api_key="test-key", **options)


@pytest.fixture
async def model(server: OpenAIServer) -> AsyncIterator[OpenAIChatModel]:
    model = chat_model(server)
    yield model
    await model.client.close()


async def ask(model: OpenAIChatModel, *messages: Message) -> ModelError:
    """Make one call that must fail, and return its ModelError."""
    with pytest.raises(ModelError) as failure:
        await model.create(list(messages or [Message.user("hi")]), [lookup], RunContext())
    return failure.value


# How one lookup(city="Oslo") round looks on the wire: the call and its result.
OSLO_TOOL_ROUND = [
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"city": "Oslo"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "snow"},
]


async def test_text_reply_becomes_an_assistant_message_with_usage(server, model):
    server.text("It snows in Oslo.", prompt_tokens=42, completion_tokens=7)
    call = ToolCall(id="call_1", name="lookup", arguments='{"city": "Oslo"}')
    messages = [
        Message.system("Be brief."),
        Message.user("Weather in Oslo?"),
        Message.assistant(None, [call]),
        Message.tool(call, "snow"),
    ]

    response = await model.create(messages, [lookup], RunContext())

    assert response.message.role == "assistant"
    assert response.message.content == "It snows in Oslo."
    assert response.message.tool_calls == []
    assert response.usage == Usage(requests=1, input_tokens=42, output_tokens=7)
    assert response.model == "gpt-test"
    (request,) = server.requests
    assert request.headers["authorization"] == "Bearer test-key"
    assert request.body["model"] == "gpt-test"
    assert request.body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Oslo?"},
        *OSLO_TOOL_ROUND,
    ]
    assert request.body["tools"] == [LOOKUP_SPEC]


async def test_request_options_are_sent_and_tools_are_left_out_when_there_are_none(server):
    server.text("ok")
    model = chat_model(server, temperature=0, max_tokens=64)
    try:
        await model.create([Message.user("hi")], [], RunContext())
    finally:
        await model.client.close()
    (request,) = server.requests
    assert request.body["temperature"] == 0
    assert request.body["max_tokens"] == 64
    assert "tools" not in request.body


async def test_tool_call_reply_becomes_tool_calls_with_raw_arguments(server, model):
    server.tool_calls(("call_a", "lookup", '{"city": "Oslo"}'), ("call_b", "lookup", ""))

    response = await model.create([Message.user("Weather?")], [lookup], RunContext())

    assert response.message.content is None
    assert response.message.tool_calls == [
        ToolCall(id="call_a", name="lookup", arguments='{"city": "Oslo"}'),
        ToolCall(id="call_b", name="lookup", arguments="{}"),
    ]


@pytest.mark.parametrize(
    ("headers", "retry_after"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after-ms": "250", "Retry-After": "7"}, 0.25),
        ({}, None),
    ],
)
async def test_rate_limit_is_retryable_with_the_delay_the_server_asked_for(
    server, model, headers, retry_after
):
    server.error(429, "Rate limit reached for gpt-test.", type="rate_limit_error", headers=headers)

    error = await ask(model)

    assert error.retryable is True
    assert error.status == 429
    assert error.retry_after == retry_after
    assert "Rate limit reached for gpt-test." in str(error)
    assert len(server.requests) == 1, "the openai client must not retry on its own"


@pytest.mark.parametrize("status", [408, 409, 500, 503])
async def test_timeouts_conflicts_and_server_errors_are_retryable(server, model, status):
    server.error(status, "Try again later.")

    error = await ask(model)

    assert error.retryable is True
    assert error.status == status
    assert f"answered {status}: Try again later." in str(error)
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (400, "check the model name, messages and tool schemas"),
        (401, "check OPENAI_API_KEY"),
        (403, "may not use this model"),
        (404, "check the model name and OPENAI_BASE_URL"),
        (422, "will not succeed if repeated"),
    ],
)
async def test_client_errors_are_not_retryable_and_say_what_to_fix(server, model, status, hint):
    server.error(status, "Something is wrong with the request.", type="invalid_request_error")

    error = await ask(model)

    assert error.retryable is False
    assert error.status == status
    assert "Something is wrong with the request." in str(error)
    assert hint in str(error)
    assert len(server.requests) == 1


async def test_error_without_a_json_body_is_reported_with_its_status(server, model):
    server.raw("<html>Bad Gateway</html>", status=502, content_type="text/html")

    error = await ask(model)

    assert error.retryable is True
    assert error.status == 502
    assert "answered 502" in str(error)


async def test_malformed_json_body_is_a_retryable_model_error(server, model):
    server.raw('{"choices": [')

    error = await ask(model)

    assert error.retryable is True
    assert "malformed response" in str(error)


async def test_reply_without_choices_is_a_retryable_model_error(server, model):
    server.raw('{"id": "chatcmpl-1", "object": "chat.completion", "choices": []}')

    error = await ask(model)

    assert error.retryable is True
    assert "no choices" in str(error)


async def test_connection_refused_is_a_retryable_model_error():
    # A bound socket that does not listen refuses connections, and holds the port.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        model = OpenAIChatModel("gpt-test", base_url=f"http://127.0.0.1:{port}/v1", api_key="k")
        try:
            error = await ask(model)
        finally:
            await model.client.close()

    assert error.retryable is True
    assert error.status is None
    assert "Cannot reach the model service" in str(error)


async def test_server_answers_500_once_its_script_runs_out(server, model):
    error = await ask(model)

    assert error.retryable is True
    assert "script ran out at request 1" in str(error)


async def test_run_waits_out_a_rate_limit_and_sends_tool_results_back(
    agent_client: AgentClient, server: OpenAIServer
):
    server.error(429, "Slow down.", type="rate_limit_error", headers={"Retry-After": "0.2"})
    server.tool_calls(
        ("call_1", "lookup", '{"city": "Oslo"}'), prompt_tokens=20, completion_tokens=3
    )
    server.text("Snow in Oslo.", prompt_tokens=30, completion_tokens=4)
    model = chat_model(server)

    async with build_worker(agent_client, {"oa": ToolCallingAgent(model, [lookup])}):
        handle = await agent_client.start_run("oa", "Weather in Oslo?", options=FAST)
        result = await handle.result()
    await model.client.close()

    assert result.output == "Snow in Oslo."
    assert result.usage == Usage(requests=2, input_tokens=50, output_tokens=7)
    assert await attempts(handle) == [2, 1]
    first, retry, second_turn = server.requests
    assert retry.received_at - first.received_at >= 0.2, "Retry-After was not honoured"
    assert (
        first.body["messages"]
        == retry.body["messages"]
        == [{"role": "user", "content": "Weather in Oslo?"}]
    )
    assert second_turn.body["messages"][1:] == OSLO_TOOL_ROUND


async def test_run_fails_after_one_attempt_when_the_key_is_refused(
    agent_client: AgentClient, server: OpenAIServer
):
    server.error(401, "Incorrect API key provided.", type="invalid_request_error")
    model = chat_model(server)

    async with build_worker(agent_client, {"oa": ToolCallingAgent(model, [lookup])}):
        handle = await agent_client.start_run("oa", "hi", options=FAST)
        with pytest.raises(RunFailedError, match="answered 401: Incorrect API key") as failure:
            await handle.result()
    await model.client.close()

    assert failure.value.error_type == "ModelError"
    assert "OPENAI_API_KEY" in str(failure.value)
    assert await attempts(handle) == [1]
    assert len(server.requests) == 1


async def test_a_streamed_reply_is_assembled_from_its_chunks(
    agent_client: AgentClient, server: OpenAIServer
):
    server.tool_calls(("call_1", "lookup", '{"city": "Oslo"}'), stream=True)
    server.text("Snow in Oslo today.", prompt_tokens=30, completion_tokens=4, stream=True)
    model = chat_model(server, stream=True)

    async with build_worker(agent_client, {"oa": ToolCallingAgent(model, [lookup])}):
        result = await agent_client.run("oa", "Weather in Oslo?", options=FAST)
    await model.client.close()

    assert result.output == "Snow in Oslo today."
    assert result.usage == Usage(requests=2, input_tokens=40, output_tokens=9)
    first, second = server.requests
    assert first.body["stream"] is True and first.body["stream_options"]["include_usage"]
    assert second.body["messages"][1:] == OSLO_TOOL_ROUND
