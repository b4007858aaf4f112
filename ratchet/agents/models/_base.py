"""The model interface every agent talks to."""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ratchet.types import Message

from ...errors import ModelError
from .._context import RunContext
from .._model_response import ModelResponse
from .._pricing import ModelPrice
from .._thread import MESSAGES
from .._tools import Tool
from .._tracing import chat_span, record_response


class ModelClient(ABC):
    """Turns a conversation into the next assistant message.

    Implementations raise :class:`ratchet.errors.ModelError` for service failures,
    with ``retryable`` set; they never retry themselves (Temporal does).

    ``thread_kinds`` lists the threads the model can continue. A model that supports
    a service-backed kind reads the turn's thread from ``context.thread`` and sends
    only ``messages`` (the part the service has not seen) with the thread's cursor.
    """

    thread_kinds: frozenset[str] = frozenset({MESSAGES})
    price: ModelPrice | None = None
    """The model's price; when set, every call's ``usage.cost_usd`` is filled in."""
    provider_name: str | None = None
    """``gen_ai.provider.name`` on the model's spans (default: the class name)."""
    context_window: int | None = None
    """The most tokens the model takes in one request; ``None``: not known. The
    provider clients take it from ``context_window=`` or from the table in
    ``ratchet.agents.models._context_windows``."""

    @property
    def prompt_window(self) -> int | None:
        """The most tokens a prompt may hold: the context window less the room the
        request keeps for the reply (``max_tokens``, where the service counts it)."""
        return self.context_window

    @property
    def model_name(self) -> str | None:
        """The model asked for: ``gen_ai.request.model`` and the span name ``chat {model}``."""
        return None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Every model call, from any agent, goes through an implementation's create:
        # wrapping it here gives each one its span and its cost without the
        # implementation opting in.
        super().__init_subclass__(**kwargs)
        create = cls.__dict__.get("create")
        if create is not None and not getattr(create, "__isabstractmethod__", False):
            cls.create = _traced(create)  # type: ignore[method-assign]

    @abstractmethod
    async def create(
        self, messages: Sequence[Message], tools: Sequence[Tool], context: RunContext
    ) -> ModelResponse: ...


_Create = Callable[[Any, Sequence[Message], Sequence[Tool], RunContext], Awaitable[ModelResponse]]


def _traced(create: _Create) -> _Create:
    @functools.wraps(create)
    async def traced(
        self: ModelClient, messages: Sequence[Message], tools: Sequence[Tool], context: RunContext
    ) -> ModelResponse:
        if type(self).create is not traced:  # super().create from a subclass's traced create
            return await create(self, messages, tools, context)
        provider = self.provider_name or type(self).__name__
        with chat_span(provider, self.model_name, context) as span:
            response = await create(self, messages, tools, context)
            if self.price is not None:
                usage = self.price.bill(response.usage)
                response = response.model_copy(update={"usage": usage})
            record_response(span, response.model, response.usage)
            return response

    return traced


def empty_reply(model: str | None) -> ModelError:
    """A reply with neither text nor tool calls: nothing to answer with or act on.
    Retryable: another sample usually has one; the run fails after max_attempts."""
    return ModelError(
        f"The model{f' {model!r}' if model else ''} replied with neither text nor tool "
        "calls; the turn is retried (the run fails after RunOptions.max_attempts).",
        retryable=True,
    )
