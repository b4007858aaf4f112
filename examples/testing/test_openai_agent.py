"""Testing code that uses the ``openai`` client: ``OpenAIServer`` speaks the API over
real HTTP from a script, errors included. No Temporal server is needed here.
"""

from collections.abc import Iterator

import pytest

from ratchet import Message, OpenAIChatModel, RunContext, tool
from ratchet.errors import ModelError
from ratchet.testing import OpenAIServer


@tool
async def weather(city: str) -> str:
    """Today's forecast for a city."""
    return "sunny"


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


async def test_the_model_asks_for_a_tool(server: OpenAIServer):
    server.tool_calls(("call_1", "weather", '{"city": "Oslo"}'))
    model = OpenAIChatModel("gpt-4o-mini", base_url=server.base_url, api_key="test")
    reply = await model.create([Message.user("Oslo?")], [weather], RunContext())
    assert [call.name for call in reply.message.tool_calls] == ["weather"]
    assert server.requests[0].body["tools"][0]["function"]["name"] == "weather"


async def test_a_rate_limit_is_left_to_temporal_to_retry(server: OpenAIServer):
    server.error(429, "slow down", headers={"Retry-After": "2"})
    model = OpenAIChatModel("gpt-4o-mini", base_url=server.base_url, api_key="test")
    with pytest.raises(ModelError) as failure:
        await model.create([Message.user("hi")], [weather], RunContext())
    assert failure.value.retryable and failure.value.retry_after == 2
