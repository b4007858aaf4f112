"""ModelResponse: what a model call returns.

Below both the model interface (``models.base``) and ``RunContext``, which tells
watchers of the tool calls in a recorded reply: the two share it without
importing each other.
"""

from __future__ import annotations

from pydantic import BaseModel

from ratchet.types import Message, Usage


class ModelResponse(BaseModel):
    """One model reply: an assistant message (text and/or tool calls) and its cost."""

    message: Message
    usage: Usage = Usage()
    model: str | None = None
    cursor: str | None = None
    """For a service-backed thread: the service's id for the conversation after this reply."""
