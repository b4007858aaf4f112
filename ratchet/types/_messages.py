"""Messages: the typed unit of every thread."""

from __future__ import annotations

import functools
import hashlib
import json
import uuid
from typing import Any, Literal, cast

from pydantic import Field

from ._parts import FilePart, ImagePart, Part
from ._sparse import SparseModel

Role = Literal["system", "user", "assistant", "tool"]


def new_id(prefix: str = "msg") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


def reply_id(execution_id: str, turn: int) -> str:
    """The id of a turn's reply: the first assistant message the turn adds without an
    id of its own. Known before the turn ends, so a watcher shows the reply streaming
    under the id the thread keeps it under (a client that stopped mid-reply holds it)."""
    return f"msg_{execution_id}_{turn}"


def result_id(execution_id: str, call_id: str) -> str:
    """The id of the tool message a turn adds to answer ``call_id`` (as ``reply_id``)."""
    return f"msg_{execution_id}_{call_id}"


def id_tag(message_id: str) -> str:
    """A short tag of a message id (8 hex characters): enough to tell whether a
    cached message is the one a turn names, in a fraction of the id's bytes (a turn
    input names its log's last message on every turn)."""
    return hashlib.blake2b(message_id.encode(), digest_size=4).hexdigest()


def approximate_size(message: Message) -> int:
    """About the JSON size of a message in bytes, without serialising it (budgets,
    cache accounting; within a few dozen bytes for ASCII text)."""
    size = 48 + len(message.role) + len(message.id) + len(message.content or "")
    size += len(message.tool_call_id or "") + len(message.name or "")
    for call in message.tool_calls:
        size += 40 + len(call.id) + len(call.name) + len(call.arguments)
    for part in message.parts:
        size += 60 + len(part.base64 or "") + len(part.url or "")
    return size


class ToolCall(SparseModel):
    """A tool call the model asked for. ``arguments`` is the model's raw JSON text."""

    id: str
    name: str
    arguments: str = "{}"

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a dict; raises ``ValueError`` when the model sent bad JSON."""
        return _json_object(self.arguments)

    def describe(self, limit: int = 60) -> str:
        """``lookup(city="Oslo")``, shortened to ``limit`` characters for summaries."""
        return _describe(self.name, self.arguments, limit)


class Message(SparseModel):
    """One message of a conversation.

    ``id`` is given when the message enters a run (by the client, the workflow or
    the turn that produced it) and never changes after. It is empty until then,
    because a message built in workflow code must not draw a random id.
    """

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list[ToolCall])
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    id: str = ""
    parts: list[Part] = Field(default_factory=list[Part])
    """Images and files next to the text (``ImagePart``, ``FilePart``)."""

    @classmethod
    def system(cls, text: str) -> Message:
        return cls(role="system", content=text)

    @classmethod
    def user(cls, text: str, *parts: ImagePart | FilePart) -> Message:
        return cls(role="user", content=text, parts=list(parts))

    @classmethod
    def assistant(
        cls, text: str | None = None, tool_calls: list[ToolCall] | None = None
    ) -> Message:
        return cls(role="assistant", content=text, tool_calls=tool_calls or [])

    @classmethod
    def tool(cls, call: ToolCall, content: str, *, is_error: bool = False) -> Message:
        return cls(
            role="tool", content=content, tool_call_id=call.id, name=call.name, is_error=is_error
        )

    @property
    def text(self) -> str:
        return self.content or ""


@functools.lru_cache(maxsize=1024)
def _describe(name: str, arguments: str, limit: int) -> str:
    """A call's one-line description (asked several times per turn: cached)."""
    try:
        value = _json_object(arguments)
        args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in value.items())
    except ValueError:
        args = arguments
    text = f"{name}({args})"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json_object(arguments: str) -> dict[str, Any]:
    value = json.loads(arguments or "{}")
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    return cast(dict[str, Any], value)
