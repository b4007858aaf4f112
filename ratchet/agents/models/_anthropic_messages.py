"""AnthropicModel: Claude through the Messages API (`pip install 'ratchet[anthropic]'`)."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Generator, Sequence
from typing import Any, cast

from ratchet.types import Message, TextDelta, ToolCall

from ...errors import ConfigurationError, ContextOverflowError, ModelError
from .._context import RunContext
from .._pricing import ModelPrice
from .._tools import Tool
from ._base import ModelClient, ModelResponse, empty_reply
from ._context_windows import known_window
from ._openai_chat import one_request, retry_after_seconds

try:
    import anthropic
    from anthropic.types import Message as AnthropicMessage
except ImportError as e:  # pragma: no cover - depends on the install
    raise ImportError(
        "AnthropicModel needs the anthropic package: pip install 'ratchet[anthropic]'"
    ) from e

RETRYABLE_STATUS = {408, 409, 429, 529}
"""529: Anthropic is overloaded. 5xx are retryable too."""


class AnthropicModel(ModelClient):
    """Claude models through the ``anthropic`` client.

    The key comes from ``ANTHROPIC_API_KEY`` (and the URL from ``ANTHROPIC_BASE_URL``)
    unless given. Like every Ratchet model the client is made with ``max_retries=0``:
    Temporal retries the turn, and every attempt is in history. System messages go in
    the request's ``system``; tool results go back as ``tool_result`` blocks.
    ``context_window`` (tokens) defaults to the model's in
    ``ratchet.agents.models._context_windows``; a prompt may hold it less ``max_tokens``.
    """

    provider_name = "anthropic"

    @property
    def model_name(self) -> str:
        return self.model

    def __init__(
        self,
        model: str = "claude-sonnet-4-5",
        *,
        client: anthropic.AsyncAnthropic | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int = 4096,
        timeout: float = 120.0,
        stream: bool = False,
        price: ModelPrice | None = None,
        context_window: int | None = None,
        **request_options: Any,
    ) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self.price = price
        self.context_window = context_window or known_window(model)
        self.stream = stream
        """Stream the reply: its text reaches watchers as it is written."""
        self._client = client
        self._base_url, self._api_key, self._timeout = base_url, api_key, timeout
        self.request_options = request_options

    @property
    def prompt_window(self) -> int | None:
        # Anthropic refuses a request whose input and max_tokens exceed the window.
        if self.context_window is None:
            return None
        return max(1, self.context_window - self.max_tokens)

    @property
    def client(self) -> anthropic.AsyncAnthropic:
        if self._client is None:
            try:
                self._client = anthropic.AsyncAnthropic(
                    max_retries=0,
                    base_url=self._base_url,
                    api_key=self._api_key,
                    timeout=self._timeout,
                )
            except anthropic.AnthropicError as e:
                raise ConfigurationError(
                    f"Cannot create the Anthropic client: {e} Set ANTHROPIC_API_KEY."
                ) from e
            if self._client.api_key is None and self._client.auth_token is None:
                # The SDK would raise a TypeError at the first request, which a turn
                # would retry as if it could pass.
                self._client = None
                raise ConfigurationError(
                    "No Anthropic API key: set ANTHROPIC_API_KEY on the worker, or pass "
                    "AnthropicModel(..., api_key=...)."
                )
        return self._client

    async def create(
        self, messages: Sequence[Message], tools: Sequence[Tool], context: RunContext
    ) -> ModelResponse:
        system, turns = to_anthropic_messages(messages)
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": turns,
            **self.request_options,
        }
        if system:
            request["system"] = system
        if tools:
            request["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in tools
            ]
        elif used := _tools_used(turns):
            # The API refuses tool blocks without tools (after a handoff from an agent
            # with tools to one without): describe the tools the blocks name, and let
            # the model call none.
            request["tools"] = [_unavailable(name) for name in used]
            request["tool_choice"] = {"type": "none"}
        with anthropic_errors():
            if self.stream:
                return await self._streamed(request, context)
            reply = cast(AnthropicMessage, await self.client.messages.create(**request))
        text = "".join(b.text for b in reply.content if b.type == "text")
        calls = [
            ToolCall(id=b.id, name=b.name, arguments=json.dumps(b.input))
            for b in reply.content
            if b.type == "tool_use"
        ]
        if not text and not calls:
            raise empty_reply(reply.model)
        return ModelResponse(
            message=Message.assistant(text or None, calls),
            usage=one_request(reply.usage.input_tokens, reply.usage.output_tokens),
            model=reply.model,
        )

    async def _streamed(self, request: dict[str, Any], context: RunContext) -> ModelResponse:
        stream = await self.client.messages.create(**request, stream=True)
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        input_tokens = output_tokens = 0
        model = None
        async for event in stream:
            if event.type == "message_start":
                model = event.message.model
                input_tokens = event.message.usage.input_tokens
            elif event.type == "content_block_start" and event.content_block.type == "tool_use":
                block = event.content_block
                calls[event.index] = {"id": block.id, "name": block.name, "arguments": ""}
            elif event.type == "content_block_delta":
                delta = event.delta
                if delta.type == "text_delta":
                    text.append(delta.text)
                    await context.emit(TextDelta(text=delta.text))
                elif delta.type == "input_json_delta" and event.index in calls:
                    calls[event.index]["arguments"] += delta.partial_json
            elif event.type == "message_delta":
                output_tokens = event.usage.output_tokens
        if not text and not calls:
            raise empty_reply(model)
        tool_calls = [
            ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"] or "{}")
            for _, c in sorted(calls.items())
        ]
        return ModelResponse(
            message=Message.assistant("".join(text) or None, tool_calls),
            usage=one_request(input_tokens, output_tokens),
            model=model,
        )


def _tools_used(turns: list[dict[str, Any]]) -> list[str]:
    """The names of the tools the ``tool_use`` blocks of ``turns`` call, in order."""
    names = [
        block["name"]
        for turn in turns
        if turn["role"] == "assistant"
        for block in turn["content"]
        if block.get("type") == "tool_use"
    ]
    return list(dict.fromkeys(names))


def _unavailable(name: str) -> dict[str, Any]:
    """A tool of an earlier agent, described only so its blocks in the thread are valid."""
    return {
        "name": name,
        "description": "A tool used earlier in this conversation; not available now.",
        "input_schema": {"type": "object"},
    }


def to_anthropic_messages(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """The system prompt and the Messages API turns: tool results become ``tool_result``
    blocks of a user turn, and consecutive turns of one role are merged."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            system.append(message.text)
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return "\n\n".join(system), turns


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": message.text,
        }
        if message.is_error:
            block["is_error"] = True
        return [block]
    blocks: list[dict[str, Any]] = []
    if message.text:
        blocks.append({"type": "text", "text": message.text})
    for part in message.parts:
        source: dict[str, Any] = (
            {"type": "url", "url": part.url}
            if part.url is not None
            else {"type": "base64", "media_type": part.media_type, "data": part.base64 or ""}
        )
        blocks.append({"type": "image" if part.type == "image" else "document", "source": source})
    for call in message.tool_calls:
        try:
            arguments = call.parsed_arguments()
        except ValueError:  # the model's own bad JSON, answered by a tool error
            arguments = {}
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments})
    return blocks


@contextlib.contextmanager
def anthropic_errors() -> Generator[None]:
    """Turn what the ``anthropic`` client raises into ModelErrors that say whether to retry."""
    try:
        yield
    except anthropic.AnthropicError as e:
        raise classify_anthropic_error(e) from e


def classify_anthropic_error(error: anthropic.AnthropicError) -> ModelError:
    """Map an ``anthropic`` exception to a ModelError that says whether to retry."""
    if isinstance(error, anthropic.APITimeoutError):
        return ModelError("The model request timed out.", retryable=True, status=408)
    if isinstance(error, anthropic.APIConnectionError):
        return ModelError(f"Cannot reach the Anthropic API: {error}", retryable=True)
    if isinstance(error, anthropic.APIStatusError):
        status = error.status_code
        detail = error.api_message or str(error)
        if status == 400 and (numbers := overflow_numbers(detail)) is not None:
            return ContextOverflowError(
                f"The Anthropic API answered 400: {detail} (the prompt is over the model's "
                "context window).",
                limit=numbers[0],
                tokens=numbers[1],
            )
        if status in RETRYABLE_STATUS or status >= 500:
            return ModelError(
                f"The Anthropic API answered {status}: {detail}",
                retryable=True,
                status=status,
                retry_after=retry_after_seconds(error.response.headers),
            )
        hint = {
            400: "the request was rejected; check the model name, messages and tool schemas",
            401: "the API key was refused; check ANTHROPIC_API_KEY",
            403: "the key may not use this model",
            404: "the model does not exist; check the model name",
        }.get(status, "the request will not succeed if repeated")
        return ModelError(
            f"The Anthropic API answered {status}: {detail} ({hint}).",
            retryable=False,
            status=status,
        )
    return ModelError(f"The model call failed: {type(error).__name__}: {error}", retryable=True)


def overflow_numbers(detail: str) -> tuple[int, int] | None:
    """(the window, the prompt's tokens) if ``detail`` is Anthropic's overflow message:
    "prompt is too long: 210000 tokens > 200000 maximum", or "input length and
    `max_tokens` exceed context limit: 199759 + 8192 > 200000, ..." (the prompt may
    then hold the window less max_tokens)."""
    if found := re.search(r"prompt is too long: (\d+) tokens > (\d+)", detail):
        return int(found.group(2)), int(found.group(1))
    if found := re.search(r"exceed context limit: (\d+) \+ (\d+) > (\d+)", detail):
        prompt, reply, window = (int(g) for g in found.groups())
        return window - reply, prompt
    return None
