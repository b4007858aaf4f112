"""Images and files in messages: to the OpenAI APIs (against the local server), through
sessions whose threads travel by reference, forks, and external payload storage."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from ratchet.agents import OpenAIChatModel, ScriptedModel, ToolCallingAgent
from ratchet.agents.models._anthropic_messages import to_anthropic_messages
from ratchet.agents.models._openai_responses import OpenAIResponsesModel, to_input_items
from ratchet.client import AgentClient
from ratchet.errors import InvalidInputError, PayloadTooLargeError
from ratchet.testing import OpenAIServer
from ratchet.types import FilePart, ImagePart, Message
from ratchet.worker import build_worker

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
PNG_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()


def test_parts_become_each_apis_own_blocks():
    pdf = FilePart.of(b"%PDF-1.7", "application/pdf", "q3.pdf")
    message = Message.user("What is this?", ImagePart.of(PNG, "image/png"), pdf)
    assert to_input_items(message) == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is this?"},
                {"type": "input_image", "image_url": PNG_URL, "detail": "auto"},
                {
                    "type": "input_file",
                    "file_data": "data:application/pdf;base64,JVBERi0xLjc=",
                    "filename": "q3.pdf",
                },
            ],
        }
    ]
    _, turns = to_anthropic_messages([message])
    image, document = turns[0]["content"][1:]
    assert image == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG_URL.split(",")[1]},
    }
    assert document["type"] == "document"
    linked = Message.user("and this?", ImagePart(url="https://example.com/cat.jpg"))
    assert to_anthropic_messages([linked])[1][0]["content"][1]["source"] == {
        "type": "url",
        "url": "https://example.com/cat.jpg",
    }


async def test_an_image_turn_reaches_chat_completions_as_an_image_url(agent_client: AgentClient):
    with OpenAIServer() as server:
        server.text("A tiny PNG.")
        model = OpenAIChatModel("gpt-test", base_url=server.base_url, api_key="test-key")
        async with build_worker(agent_client, {"eyes": ToolCallingAgent(model)}):
            prompt = [Message.user("What is this?", ImagePart.of(PNG, "image/png"))]
            result = await agent_client.run("eyes", prompt)
        await model.client.close()
    assert result.output == "A tiny PNG."
    (request,) = server.requests
    assert request.body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": PNG_URL}},
            ],
        }
    ]


async def test_an_image_turn_reaches_the_responses_api_as_an_input_image(
    agent_client: AgentClient,
):
    with OpenAIServer() as server:
        server.response("A tiny PNG.")
        model = OpenAIResponsesModel("gpt-test", base_url=server.base_url, api_key="k")
        async with build_worker(agent_client, {"eyes": ToolCallingAgent(model)}):
            image = ImagePart.of(PNG, "image/png").model_copy(update={"detail": "low"})
            result = await agent_client.run("eyes", [Message.user("What is this?", image)])
        await model.client.close()
    assert result.output == "A tiny PNG."
    (request,) = server.requests
    (item,) = request.body["input"]
    assert item["content"][1] == {"type": "input_image", "image_url": PNG_URL, "detail": "low"}


def seen_parts(seen: list[list[int]]) -> ToolCallingAgent:
    """Notes how many parts each message of every request had; answers "ok"."""

    def reply(messages, context):
        seen.append([len(m.parts) for m in messages])
        return "ok"

    return ToolCallingAgent(ScriptedModel(reply))


async def test_parts_survive_a_session_paged_by_reference_and_its_fork(agent_client: AgentClient):
    seen: list[list[int]] = []
    async with build_worker(agent_client, {"eyes": seen_parts(seen)}):
        session = await agent_client.start_session("eyes")
        await session.send([Message.user("look", ImagePart.of(PNG, "image/png"))])
    # Another worker, with an empty cache: it pages the session's log in by query.
    async with build_worker(agent_client, {"eyes": seen_parts(seen)}):
        await session.send("and now?")
        fork = await agent_client.fork(session.id, at_turn=1)
        await fork.send("from the fork")
        forked = (await fork.thread()).messages
        await session.close()
        await fork.close()
    assert seen == [[1], [1, 0, 0], [1, 0, 0]]  # the image, read back every time
    assert forked[0].parts == [ImagePart.of(PNG, "image/png")]


async def test_a_large_part_needs_payload_storage_and_then_travels_by_reference(
    agent_client: AgentClient, temporal_server, task_queue: str, tmp_path: Path
):
    photo = ImagePart.of(bytes(300 * 1024), "image/jpeg")
    with pytest.raises(PayloadTooLargeError, match="payload_storage") as refused:
        await agent_client.start_run("eyes", [Message.user("look", photo)])
    assert "over 256 KiB: [image image/jpeg, 300 KiB]" in str(refused.value)

    stored = await AgentClient.connect(
        temporal_server.address, task_queue=task_queue, payload_storage=tmp_path / "payloads"
    )
    seen: list[list[int]] = []
    async with build_worker(stored, {"eyes": seen_parts(seen)}):
        session = await stored.start_session("eyes")
        assert (await session.send([Message.user("look", photo)])).output == "ok"
        (first, _) = (await session.thread()).messages
        history = await session.workflow.fetch_history()
        await session.close()
    assert first.parts == [photo] and seen == [[1]]
    assert len(history.to_json()) < 100_000  # the photo is a reference in history
    assert any(p.is_file() for p in (tmp_path / "payloads").rglob("*"))


def test_chat_completions_refuses_a_file_by_url_saying_what_to_send():
    from ratchet.agents.models._openai_chat import to_openai_message

    linked = Message.user("read", FilePart(url="https://example.com/q3.pdf"))
    with pytest.raises(InvalidInputError, match="FilePart.of"):
        to_openai_message(linked)
