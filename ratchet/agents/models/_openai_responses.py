"""OpenAIResponsesModel: the OpenAI Responses API, stateless or service-backed.

On a "messages" thread it sends the whole conversation with ``store=False``, like
Chat Completions. On an "openai.responses" thread the service keeps the
conversation: each call sends only what the service has not seen (new user
messages, tool results) with ``previous_response_id``, and the new response id
becomes the thread's cursor. Only that id travels between turns and lives in
Temporal history, next to the turn's new messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from openai.types.responses import (
    Response,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from ratchet.types import FilePart, ImagePart, Message, TextDelta, ToolCall, data_url

from ...errors import ModelError
from .._context import RunContext
from .._thread import MESSAGES, OPENAI_RESPONSES
from .._tools import Tool
from ._base import ModelResponse, empty_reply
from ._openai_chat import OpenAIChatModel, one_request, openai_errors


class OpenAIResponsesModel(OpenAIChatModel):
    """Responses API through the ``openai`` client (``max_retries=0``; Temporal retries).

    ``stream=True`` streams the response and keeps the completed one, which bounds
    the time to first byte for long answers behind proxies that cut idle requests.
    """

    thread_kinds = frozenset({MESSAGES, OPENAI_RESPONSES})

    async def create(
        self, messages: Sequence[Message], tools: Sequence[Tool], context: RunContext
    ) -> ModelResponse:
        thread = context.thread
        service = thread is not None and getattr(thread, "kind", MESSAGES) == OPENAI_RESPONSES
        instructions = [m.text for m in messages if m.role == "system"]
        request: dict[str, Any] = {
            "model": self.model,
            "input": [item for m in messages if m.role != "system" for item in to_input_items(m)],
            "store": service,
            **self.request_options,
        }
        if instructions:
            request["instructions"] = "\n\n".join(instructions)
        if service and thread is not None and thread.cursor:
            request["previous_response_id"] = thread.cursor
        if tools:
            request["tools"] = [to_function_tool(t) for t in tools]
        with openai_errors():
            response = await self._call(request, context)
        return from_response(response, cursor=response.id if service else None)

    async def _call(self, request: dict[str, Any], context: RunContext) -> Response:
        if not self.stream:
            return cast(Response, await self.client.responses.create(**request))
        completed = None
        stream = await self.client.responses.create(**request, stream=True)
        async for event in stream:
            if event.type == "response.output_text.delta":
                await context.emit(TextDelta(text=event.delta))
            elif event.type == "response.completed":
                completed = event.response
            elif event.type in ("response.failed", "error"):
                detail = getattr(getattr(event, "response", None), "error", None) or event
                raise ModelError(f"The model's streamed response failed: {detail}", retryable=True)
        if completed is None:
            raise ModelError(
                "The model's stream ended before the response completed.", retryable=True
            )
        return completed


def to_input_items(message: Message) -> list[dict[str, Any]]:
    """One message as Responses API input items."""
    if message.role == "tool":
        return [
            {
                "type": "function_call_output",
                "call_id": message.tool_call_id,
                "output": message.text,
            }
        ]
    items: list[dict[str, Any]] = []
    if message.parts:
        text = [{"type": "input_text", "text": message.text}] if message.text else []
        content = text + [_input_part(p) for p in message.parts]
        items.append({"role": message.role, "content": content})
    elif message.content or message.role != "assistant":
        items.append({"role": message.role, "content": message.text})
    for call in message.tool_calls:
        items.append(
            {
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments,
            }
        )
    return items


def _input_part(part: ImagePart | FilePart) -> dict[str, Any]:
    if isinstance(part, ImagePart):
        return {"type": "input_image", "image_url": data_url(part), "detail": part.detail or "auto"}
    if part.url is not None:
        return {"type": "input_file", "file_url": part.url}
    return {"type": "input_file", "file_data": data_url(part), "filename": part.filename or "file"}


def to_function_tool(tool: Tool) -> dict[str, Any]:
    spec = tool.spec()["function"]
    return {"type": "function", "strict": False, **spec}


def from_response(response: Response, *, cursor: str | None) -> ModelResponse:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for item in response.output or []:
        if isinstance(item, ResponseOutputMessage):
            texts += [c.text for c in item.content if isinstance(c, ResponseOutputText)]
        elif isinstance(item, ResponseFunctionToolCall):
            calls.append(
                ToolCall(id=item.call_id, name=item.name, arguments=item.arguments or "{}")
            )
    if not texts and not calls:
        raise empty_reply(response.model)
    counts = response.usage
    return ModelResponse(
        message=Message.assistant("".join(texts) or None, calls),
        usage=one_request(counts.input_tokens, counts.output_tokens) if counts else one_request(),
        model=response.model,
        cursor=cursor,
    )
