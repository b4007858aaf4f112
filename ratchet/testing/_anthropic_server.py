"""A local HTTP server speaking Anthropic's Messages API, for tests
(``ratchet.testing.AnthropicServer``).

Like ``OpenAIServer``: each POST to ``/v1/messages`` is recorded and answered with
the next scripted reply (JSON, or server-sent events with ``stream=True``); when the
script runs out it answers 500. With ``context_window`` it refuses a longer prompt
as Anthropic does (400 "prompt is too long: N tokens > M maximum"), and like the
real API it refuses ``tool_use`` or ``tool_result`` blocks in a request that defines
no tools (400 ``invalid_request_error``). Point
``AnthropicModel(base_url=server.base_url)`` at it. Standard library only.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from ._openai_server import OpenAIServer, Reply, Request, json_reply, sse_reply

MESSAGES_PATH = "/v1/messages"
TOOL_BLOCKS = ("tool_use", "tool_result")
TOOLS_REQUIRED = "Requests which include `tool_use` or `tool_result` blocks must define tools."


def anthropic_error(
    status: int, message: str, type: str, headers: dict[str, str] | None = None
) -> Reply:
    """An error reply with the Messages API's body."""
    body = {"type": "error", "error": {"type": type, "message": message}}
    return json_reply(status, body, headers)


class AnthropicServer(OpenAIServer):
    """Answers Messages API requests from a FIFO script; use it as a context manager."""

    paths = (MESSAGES_PATH,)

    @property
    def base_url(self) -> str:
        return super().base_url.removesuffix("/v1")  # the client adds /v1/messages

    def message(
        self,
        text: str | None = None,
        *tool_uses: tuple[str, str, dict[str, Any]],
        input_tokens: int = 10,
        output_tokens: int = 5,
        stream: bool = False,
    ) -> None:
        """Script a reply: text and/or tool uses ``(id, name, input)``."""
        content: list[dict[str, Any]] = []
        if text is not None:
            content.append({"type": "text", "text": text})
        content += [
            {"type": "tool_use", "id": id, "name": name, "input": input}
            for id, name, input in tool_uses
        ]
        stop = "tool_use" if tool_uses else "end_turn"

        def reply(request: Request) -> Reply:
            body = {
                "id": f"msg_{uuid.uuid4().hex[:24]}",
                "type": "message",
                "role": "assistant",
                "model": request.body.get("model"),
                "content": content,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": request.tokens or input_tokens,
                    "output_tokens": output_tokens,
                },
            }
            if not stream:
                return json_reply(200, body)
            return sse_reply(_events(body, output_tokens))

        self._script.append(reply)

    def refusal(self, request: Request) -> Reply | None:
        """Tool blocks without tools, refused as the Messages API refuses them."""
        if request.body.get("tools"):
            return None
        for turn in request.body.get("messages") or []:
            content = turn.get("content")
            if isinstance(content, list) and any(
                isinstance(b, dict) and b.get("type") in TOOL_BLOCKS for b in content
            ):
                return anthropic_error(400, TOOLS_REQUIRED, "invalid_request_error")
        return None

    def overflow(self, path: str, tokens: int, window: int) -> Reply:
        """The refusal of a prompt of ``tokens`` over ``window``, as Anthropic words it."""
        message = f"prompt is too long: {tokens} tokens > {window} maximum"
        return anthropic_error(400, message, "invalid_request_error")

    def error(
        self,
        status: int,
        message: str,
        *,
        type: str = "api_error",
        headers: dict[str, str] | None = None,
    ) -> None:
        """Script an HTTP error with the Messages API's error body."""
        self._script.append(lambda request: anthropic_error(status, message, type, headers))


def _events(body: dict[str, Any], output_tokens: int) -> list[dict[str, Any]]:
    """A message as stream events: text word by word, each tool's input in two parts."""
    start = {**body, "content": [], "stop_reason": None}
    start["usage"] = {**body["usage"], "output_tokens": 1}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(body["content"]):
        if block["type"] == "text":
            opened = {"type": "text", "text": ""}
            words = block["text"].split(" ")
            deltas = [
                {"type": "text_delta", "text": w if i == 0 else " " + w}
                for i, w in enumerate(words)
            ]
        else:
            opened = {**block, "input": {}}
            arguments = json.dumps(block["input"])
            half = len(arguments) // 2
            deltas = [
                {"type": "input_json_delta", "partial_json": part}
                for part in (arguments[:half], arguments[half:])
            ]
        events.append({"type": "content_block_start", "index": index, "content_block": opened})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": body["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        }
    )
    events.append({"type": "message_stop"})
    return events
