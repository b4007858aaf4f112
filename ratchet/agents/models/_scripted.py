"""ScriptedModel: an offline, deterministic model for tests, demos and benchmarks."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ratchet.types import Message, TextDelta, ToolCall, Usage

from ...errors import ScriptExhaustedError
from .._context import RunContext
from .._pricing import ModelPrice
from .._tools import Tool
from ._base import ModelClient, ModelResponse

Reply = str | Message | BaseException
ScriptFunction = Callable[[Sequence[Message], RunContext], Reply | Awaitable[Reply]]


class ScriptedModel(ModelClient):
    """Replies from a script instead of a model.

    With a list, reply *k* answers the conversation that already holds *k*
    assistant messages. The choice depends only on the conversation, so a retried
    turn, or the same turn on another worker process, gets the same reply. With a
    function (plain or ``async``), the function picks the reply from the messages
    and context.

    A reply is a text, a :class:`Message` (see :meth:`call`) or an exception to raise.
    Asking past the end of the script raises :class:`ScriptExhaustedError`.
    ``context_window`` is unknown unless given (see ``ModelClient.context_window``);
    given one, a long thread's prompt is cut down and holds fewer assistant messages,
    so script such a model with a function (``context.turn``) rather than a list.
    """

    provider_name = "scripted"

    @property
    def model_name(self) -> str:
        return self.name

    def __init__(
        self,
        script: Sequence[Reply] | ScriptFunction,
        *,
        name: str = "scripted",
        price: ModelPrice | None = None,
        stream: bool = False,
        context_window: int | None = None,
    ) -> None:
        self._script = script
        self.price = price
        self.context_window = context_window
        self.stream = stream
        """Send the reply's text to watchers word by word, like a streaming model."""
        self.name = name
        self.requests = 0
        self.max_index = -1

    @staticmethod
    def call(tool_name: str, /, **arguments: Any) -> Message:
        """A reply that asks for one tool call."""
        return ScriptedModel.raw_call(tool_name, json.dumps(arguments))

    @staticmethod
    def calls(*calls: tuple[str, dict[str, Any]]) -> Message:
        """A reply that asks for several tool calls at once (they run in parallel)."""
        return Message.assistant(
            tool_calls=[ToolCall(id="", name=n, arguments=json.dumps(a)) for n, a in calls]
        )

    @staticmethod
    def raw_call(tool_name: str, raw_arguments: str) -> Message:
        """A reply whose arguments are sent exactly as given (e.g. malformed JSON)."""
        return Message.assistant(
            tool_calls=[ToolCall(id="", name=tool_name, arguments=raw_arguments)]
        )

    def assert_consumed(self) -> None:
        """Raise unless every scripted reply was asked for (list scripts only)."""
        if not callable(self._script) and self.max_index + 1 < len(self._script):
            raise AssertionError(
                f"ScriptedModel {self.name!r}: {len(self._script) - self.max_index - 1} "
                f"of {len(self._script)} replies were never used"
            )

    async def create(
        self, messages: Sequence[Message], tools: Sequence[Tool], context: RunContext
    ) -> ModelResponse:
        self.requests += 1
        index, prompt_chars = 0, 0
        for m in messages:  # one plain pass: a long run's prompt is hundreds of messages
            index += m.role == "assistant"
            prompt_chars += len(m.content or "")
        if callable(self._script):
            reply = self._script(messages, context)
            if inspect.isawaitable(reply):
                reply = await reply
        else:
            if index >= len(self._script):
                raise ScriptExhaustedError(
                    f"ScriptedModel {self.name!r} has {len(self._script)} replies but was asked "
                    f"for reply {index + 1}; add replies to the script or lower max_turns."
                )
            self.max_index = max(self.max_index, index)
            reply = self._script[index]
        if isinstance(reply, BaseException):
            raise reply
        message = _as_message(reply, index)
        if self.stream and message.content:
            for word in re.findall(r"\S+\s*", message.content):
                await context.emit(TextDelta(text=word))
        return ModelResponse(
            message=message,
            usage=Usage(
                requests=1,
                input_tokens=prompt_chars // 4 + 1,
                output_tokens=len(message.content or "") // 4 + 1,
            ),
            model=self.name,
        )


def _as_message(reply: str | Message, index: int) -> Message:
    if isinstance(reply, str):
        return Message.assistant(reply)
    # Tool call ids must be the same on every attempt, so they come from the position.
    calls = [
        call.model_copy(update={"id": call.id or f"call_{index}_{j}"})
        for j, call in enumerate(reply.tool_calls)
    ]
    return reply.model_copy(update={"tool_calls": calls}, deep=True)
