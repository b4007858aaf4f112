"""OpenAIResponsesModel and service-backed threads, against a real local HTTP server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta

import pytest
from temporalio.api.enums.v1 import EventType

from ratchet.agents import (
    OpenAIChatModel,
    OpenAIResponsesModel,
    RunContext,
    ServiceThread,
    ToolCallingAgent,
)
from ratchet.client import AgentClient
from ratchet.errors import ModelError, RunFailedError
from ratchet.testing import OpenAIServer
from ratchet.types import Message, Usage
from ratchet.wire import RunOptions
from ratchet.worker import build_worker

from ..history import attempts, events, of_type
from .test_openai_chat import lookup

FAST = RunOptions(initial_retry_interval=timedelta(milliseconds=50))
SERVICE = FAST.model_copy(update={"thread_kind": "openai.responses"})
OSLO_CALL = ("call_1", "lookup", '{"city": "Oslo"}')


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


def responses_model(server: OpenAIServer, **options) -> OpenAIResponsesModel:
    return OpenAIResponsesModel("gpt-test", base_url=server.base_url, api_key="k", **options)


async def run_weather(client: AgentClient, model, options: RunOptions):
    agent = ToolCallingAgent(model, [lookup], instructions="Be brief.")
    async with build_worker(client, {"oa": agent}):
        handle = await client.start_run("oa", "Weather in Oslo?", options=options)
        result = await handle.result()
        state = await handle.record()
    await model.client.close()
    return handle, result, state


async def test_on_a_messages_thread_the_whole_conversation_is_sent_unstored(
    agent_client: AgentClient, server: OpenAIServer
):
    server.response(None, OSLO_CALL)
    server.response("Snow in Oslo.")
    _, result, _ = await run_weather(agent_client, responses_model(server), FAST)

    assert result.output == "Snow in Oslo."
    first, second = (r.body for r in server.requests)
    assert first["store"] is False and "previous_response_id" not in first
    assert first["instructions"] == "Be brief."
    assert first["input"] == [{"role": "user", "content": "Weather in Oslo?"}]
    assert first["tools"][0]["name"] == "lookup" and first["tools"][0]["type"] == "function"
    assert second["input"] == [
        {"role": "user", "content": "Weather in Oslo?"},
        {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": OSLO_CALL[2]},
        {"type": "function_call_output", "call_id": "call_1", "output": "snow"},
    ]


async def test_a_service_thread_sends_only_new_items_and_keeps_only_the_id(
    agent_client: AgentClient, server: OpenAIServer
):
    first_id = server.response(None, OSLO_CALL, input_tokens=20, output_tokens=3)
    last_id = server.response("Snow in Oslo.", input_tokens=30, output_tokens=4)
    handle, result, state = await run_weather(agent_client, responses_model(server), SERVICE)

    assert result.output == "Snow in Oslo."
    assert result.usage == Usage(requests=2, input_tokens=50, output_tokens=7)
    first, second = (r.body for r in server.requests)
    assert first["store"] is True and "previous_response_id" not in first
    assert second["previous_response_id"] == first_id
    assert second["input"] == [
        {"type": "function_call_output", "call_id": "call_1", "output": "snow"}
    ]
    thread = state.session.thread
    assert thread.kind == "openai.responses" and thread.cursor == last_id
    # The thread's messages are still recorded (for the UI and audit) ...
    assert [m.role for m in thread.messages] == ["user", "assistant", "tool", "assistant"]
    # ... but a turn's input carries the cursor and names the log positions the
    # service has not seen (the tool result), never the messages themselves.
    scheduled = of_type(await events(handle), EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    second_input = json.loads(
        scheduled[1].activity_task_scheduled_event_attributes.input.payloads[0].data
    )
    assert second_input["thread"]["cursor"] == first_id
    assert second_input["thread"]["length"] == 3 and second_input["view"] == "2-"
    assert "snow" not in json.dumps(second_input)


async def test_a_streamed_response_is_collected(agent_client: AgentClient, server: OpenAIServer):
    server.response(None, OSLO_CALL, stream=True)
    server.response("Snow in Oslo today.", stream=True)
    _, result, _ = await run_weather(agent_client, responses_model(server, stream=True), SERVICE)

    assert result.output == "Snow in Oslo today."
    assert all(r.body["stream"] is True for r in server.requests)


async def test_a_chat_completions_agent_refuses_a_service_thread_before_any_model_call(
    agent_client: AgentClient, server: OpenAIServer
):
    model = OpenAIChatModel("gpt-test", base_url=server.base_url, api_key="k")
    with pytest.raises(RunFailedError) as failure:
        await run_weather(agent_client, model, SERVICE)

    assert failure.value.error_type == "IncompatibleThreadError"
    assert "'openai.responses' thread" in str(failure.value)
    assert "OpenAIResponsesModel" in str(failure.value)
    assert server.requests == []


async def test_rate_limit_is_waited_out_then_the_run_continues(
    agent_client: AgentClient, server: OpenAIServer
):
    server.error(429, "Slow down.", type="rate_limit_error", headers={"Retry-After": "0.2"})
    server.response(None, OSLO_CALL)
    server.error(500, "Internal error.")
    server.response("Snow in Oslo.")
    handle, result, _ = await run_weather(agent_client, responses_model(server), SERVICE)

    assert result.output == "Snow in Oslo."
    assert await attempts(handle) == [2, 2]
    limited, retry, *_ = server.requests
    assert retry.received_at - limited.received_at >= 0.2, "Retry-After was not honoured"


@pytest.mark.parametrize(
    "reply",
    [
        lambda s: s.raw('{"id": "resp_1", "output": ['),
        lambda s: s.error(503, "Overloaded."),
    ],
    ids=["malformed-json", "503"],
)
async def test_broken_replies_are_retryable_model_errors(server: OpenAIServer, reply):
    reply(server)
    model = responses_model(server)
    thread = ServiceThread("openai.responses", cursor="resp_0")
    with pytest.raises(ModelError) as failure:
        await model.create([Message.user("hi")], [], RunContext(thread=thread))
    await model.client.close()

    assert failure.value.retryable is True
    assert server.requests[0].body["previous_response_id"] == "resp_0"
