"""OpenAIChatModel: any OpenAI-compatible Chat Completions service."""

from __future__ import annotations

import contextlib
import email.utils
import json
import re
import time
from collections.abc import Generator, Sequence
from typing import Any, cast

import openai
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionMessageFunctionToolCall,
)

from ratchet.types import FilePart, ImagePart, Message, TextDelta, ToolCall, Usage, data_url

from ...errors import ConfigurationError, ContextOverflowError, InvalidInputError, ModelError
from .._context import RunContext
from .._pricing import ModelPrice
from .._tools import Tool
from ._base import ModelClient, ModelResponse, empty_reply
from ._context_windows import known_window

RETRYABLE_STATUS = {408, 409, 429}
REPLY_LIMITS = ("max_completion_tokens", "max_tokens", "max_output_tokens")
"""Request options whose tokens count against the context window with the prompt's."""


class OpenAIChatModel(ModelClient):
    """Chat Completions through the ``openai`` client.

    The base URL and key come from ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` unless
    given, so any OpenAI-compatible server works. The client is made with
    ``max_retries=0``: Temporal retries the turn, and every attempt is in history.
    ``context_window`` (tokens) defaults to the model's in
    ``ratchet.agents.models._context_windows``; give it for other models.
    """

    provider_name = "openai"

    @property
    def model_name(self) -> str:
        return self.model

    def __init__(
        self,
        model: str = "gpt-4o-mini",
        *,
        client: openai.AsyncOpenAI | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        stream: bool = False,
        price: ModelPrice | None = None,
        context_window: int | None = None,
        **request_options: Any,
    ) -> None:
        self.model = model
        self.price = price
        self.context_window = context_window or known_window(model)
        self.stream = stream
        """Stream the reply and assemble it (text and tool calls) when it is complete."""
        self._client = client
        self._base_url, self._api_key, self._timeout = base_url, api_key, timeout
        self.request_options = request_options

    @property
    def prompt_window(self) -> int | None:
        if self.context_window is None:
            return None
        options = self.request_options
        reply = next((options[k] for k in REPLY_LIMITS if options.get(k)), 0)
        return max(1, self.context_window - int(reply))

    @property
    def client(self) -> openai.AsyncOpenAI:
        if self._client is None:
            try:
                self._client = openai.AsyncOpenAI(
                    max_retries=0,
                    base_url=self._base_url,
                    api_key=self._api_key,
                    timeout=self._timeout,
                )
            except openai.OpenAIError as e:
                raise ConfigurationError(
                    f"Cannot create the OpenAI client: {e} "
                    "Set OPENAI_API_KEY (and OPENAI_BASE_URL for another compatible server)."
                ) from e
        return self._client

    async def create(
        self, messages: Sequence[Message], tools: Sequence[Tool], context: RunContext
    ) -> ModelResponse:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [to_openai_message(m) for m in messages],
            **self.request_options,
        }
        if tools:
            request["tools"] = [t.spec() for t in tools]
        with openai_errors():
            if self.stream:
                return await self._streamed(request, context)
            completion = cast(ChatCompletion, await self.client.chat.completions.create(**request))
        if not completion.choices:
            raise ModelError("The model returned no choices.", retryable=True)
        reply = completion.choices[0].message
        calls = [
            ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments or "{}")
            for c in (reply.tool_calls or [])
            if isinstance(c, ChatCompletionMessageFunctionToolCall)
        ]
        if not reply.content and not calls:
            raise empty_reply(completion.model)
        counts = completion.usage
        usage = one_request(counts.prompt_tokens, counts.completion_tokens) if counts else None
        return ModelResponse(
            message=Message.assistant(reply.content, calls),
            usage=usage or one_request(),
            model=completion.model,
        )

    async def _streamed(self, request: dict[str, Any], context: RunContext) -> ModelResponse:
        stream = await self.client.chat.completions.create(
            **request, stream=True, stream_options={"include_usage": True}
        )
        collected = _Collected()
        async for chunk in stream:
            text = collected.add(chunk)
            if text:
                await context.emit(TextDelta(text=text))
        return collected.response()


class _Collected:
    """A streamed chat completion, collected chunk by chunk: its text, its tool calls
    (their names and arguments arrive in pieces), its usage and model."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.usage = one_request()
        self.model: str | None = None

    def add(self, chunk: ChatCompletionChunk) -> str | None:
        """Take one chunk; returns the text it adds, if any."""
        self.model = chunk.model or self.model
        if chunk.usage is not None:
            self.usage = one_request(chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
        for choice in chunk.choices[:1]:
            delta = choice.delta
            for part in delta.tool_calls or []:
                call = self.calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                call["id"] = part.id or call["id"]
                if part.function is not None:
                    call["name"] += part.function.name or ""
                    call["arguments"] += part.function.arguments or ""
            if delta.content:
                self.text.append(delta.content)
                return delta.content
        return None

    def response(self) -> ModelResponse:
        if not self.text and not self.calls:
            raise empty_reply(self.model)
        tool_calls = [
            ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"] or "{}")
            for _, c in sorted(self.calls.items())
        ]
        message = Message.assistant("".join(self.text) or None, tool_calls)
        return ModelResponse(message=message, usage=self.usage, model=self.model)


def one_request(input_tokens: int | None = 0, output_tokens: int | None = 0) -> Usage:
    """The usage of one model call, from the token counts a service reported (if any)."""
    return Usage(requests=1, input_tokens=input_tokens or 0, output_tokens=output_tokens or 0)


@contextlib.contextmanager
def openai_errors() -> Generator[None]:
    """Turn what the ``openai`` client raises into ModelErrors that say whether to retry."""
    try:
        yield
    except openai.OpenAIError as e:
        error = classify_openai_error(e)
        secret = _credential(e)
        if secret and secret in f"{error} {e}":
            # Some servers echo the key back; the message and its cause go into history.
            error.args = (str(error).replace(secret, "[redacted API key]"),)
            raise error from None
        raise error from e
    except json.JSONDecodeError as e:
        # The client parses the body itself and lets a JSON error through unwrapped.
        raise ModelError(f"The model service sent a malformed response: {e}", retryable=True) from e


def to_openai_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.text}
    if message.role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in message.tool_calls
            ]
        return out
    if message.parts:
        text = [{"type": "text", "text": message.text}] if message.text else []
        return {"role": message.role, "content": text + [_chat_part(p) for p in message.parts]}
    return {"role": message.role, "content": message.text}


def _chat_part(part: ImagePart | FilePart) -> dict[str, Any]:
    if isinstance(part, ImagePart):
        image: dict[str, Any] = {"url": data_url(part)}
        if part.detail is not None:
            image["detail"] = part.detail
        return {"type": "image_url", "image_url": image}
    if part.url is not None:
        raise InvalidInputError(
            f"Chat Completions takes a file as bytes, not a URL ({part.url}): send "
            "FilePart.of(data, media_type, filename), or use OpenAIResponsesModel."
        )
    return {
        "type": "file",
        "file": {"file_data": data_url(part), "filename": part.filename or "file"},
    }


def classify_openai_error(error: openai.OpenAIError) -> ModelError:
    """Map an ``openai`` exception to a ModelError that says whether to retry."""
    if isinstance(error, openai.APITimeoutError):
        return ModelError("The model request timed out.", retryable=True, status=408)
    if isinstance(error, openai.APIConnectionError):
        return ModelError(f"Cannot reach the model service: {error}", retryable=True)
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        detail = _error_detail(error)
        if status == 400 and _is_overflow(error, detail):
            limit, tokens = overflow_numbers(detail)
            return ContextOverflowError(
                f"The model service answered 400: {detail} (the prompt is over the model's "
                "context window).",
                limit=limit,
                tokens=tokens,
            )
        if status == 429 and _code(error) == "insufficient_quota":
            return ModelError(
                f"The model service answered 429: {detail} (insufficient_quota: the "
                "account's quota or credit is used up, not a rate limit; check its plan "
                "and billing).",
                retryable=False,
                status=status,
            )
        if status in RETRYABLE_STATUS or status >= 500:
            return ModelError(
                f"The model service answered {status}: {detail}",
                retryable=True,
                status=status,
                retry_after=retry_after_seconds(error.response.headers),
            )
        hint = {
            400: "the request was rejected; check the model name, messages and tool schemas",
            401: "the API key was refused; check OPENAI_API_KEY",
            403: "the key may not use this model or endpoint",
            404: "the model or endpoint does not exist; check the model name and OPENAI_BASE_URL",
        }.get(status, "the request will not succeed if repeated")
        return ModelError(
            f"The model service answered {status}: {detail} ({hint}).",
            retryable=False,
            status=status,
        )
    if isinstance(error, openai.APIResponseValidationError):
        return ModelError(f"The model service sent a malformed response: {error}", retryable=True)
    return ModelError(f"The model call failed: {type(error).__name__}: {error}", retryable=True)


def _code(error: openai.APIStatusError) -> object:
    """The ``code`` of OpenAI's error body (``{"error": {"code": ...}}``), if any."""
    body = error.body
    if isinstance(body, dict):
        fields = cast(dict[str, object], body)
        inner = fields.get("error", fields)
        if isinstance(inner, dict):
            return cast(dict[str, object], inner).get("code")
    return None


def _is_overflow(error: openai.APIStatusError, detail: str) -> bool:
    """OpenAI says ``code: context_length_exceeded`` (Chat Completions and Responses);
    compatible servers (vLLM, llama.cpp, ...) often say only the message."""
    if _code(error) == "context_length_exceeded":
        return True
    return bool(re.search(r"maximum context length|context window|context length", detail, re.I))


def overflow_numbers(detail: str) -> tuple[int | None, int | None]:
    """(the window, the prompt's tokens) from an overflow message, where it says them:
    "maximum context length is 8192 tokens. However, your messages resulted in
    8227 tokens", or "... you requested 4268 tokens (4012 in the messages, 256 in
    the completion)" (the prompt may then hold the window less the completion)."""
    limit = re.search(r"maximum context length is (\d+)", detail)
    tokens = re.search(r"(?:resulted in|requested) (\d+) tokens", detail)
    split = re.search(r"(\d+) in the messages, (\d+) in the completion", detail)
    window = int(limit.group(1)) if limit else None
    if split and window is not None:
        return window - int(split.group(2)), int(split.group(1))
    return window, int(tokens.group(1)) if tokens else None


def _credential(error: openai.OpenAIError) -> str | None:
    """The API key the failed request carried, if any."""
    if not isinstance(error, openai.APIError):
        return None
    headers = error.request.headers
    header = headers.get("api-key") or headers.get("authorization", "")
    key = header.removeprefix("Bearer ").strip()
    return key if len(key) >= 8 else None


def _error_detail(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        fields = cast(dict[str, object], body)
        inner = fields.get("error", fields)
        if isinstance(inner, dict) and (text := cast(dict[str, object], inner).get("message")):
            return str(text)
    return error.message


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (delta or HTTP date)."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return float(raw_ms) / 1000
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(raw)
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None
