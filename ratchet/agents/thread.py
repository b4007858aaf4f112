"""Threads: the conversation an agent reads and appends to.

Agents keep no conversation of their own; the engine hands them a thread on every
call. What the agent appends during a turn is what the turn produced.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable

from .messages import Message, new_id


class Thread(ABC):
    """A conversation. ``messages`` may be local or a view of a remote store."""

    id: str

    @property
    @abstractmethod
    def messages(self) -> list[Message]: ...

    @abstractmethod
    async def on_new_messages(self, messages: Iterable[Message]) -> None:
        """Append messages the agent has read or produced."""


class ChatMessageThread(Thread):
    """A thread held in memory as a list of chat messages."""

    def __init__(self, messages: Iterable[Message] = (), *, id: str | None = None) -> None:
        self.id = id or new_id("thread")
        self._messages = list(messages)

    @property
    def messages(self) -> list[Message]:
        return list(self._messages)

    async def on_new_messages(self, messages: Iterable[Message]) -> None:
        self._messages.extend(messages)

    def __len__(self) -> int:
        return len(self._messages)

    def __repr__(self) -> str:
        return f"ChatMessageThread(id={self.id!r}, messages={len(self._messages)})"
