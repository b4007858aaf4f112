"""The model interface every agent talks to."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from pydantic import BaseModel

from ..context import RunContext
from ..messages import Message
from ..pricing import ModelPrice
from ..thread import MESSAGES
from ..tools import Tool
from ..usage import Usage


class ModelResponse(BaseModel):
    """One model reply: an assistant message (text and/or tool calls) and its cost."""

    message: Message
    usage: Usage = Usage()
    model: str | None = None
    cursor: str | None = None
    """For a service-backed thread: the service's id for the conversation after this reply."""


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
    """The model's price; when set, :meth:`priced` fills in ``usage.cost_usd``."""

    def priced(self, response: ModelResponse) -> ModelResponse:
        """``response`` with its cost filled in from :attr:`price` (if any)."""
        if self.price is None:
            return response
        return response.model_copy(update={"usage": self.price.bill(response.usage)})

    @abstractmethod
    async def create(
        self, messages: Sequence[Message], tools: Sequence[Tool], context: RunContext
    ) -> ModelResponse: ...
