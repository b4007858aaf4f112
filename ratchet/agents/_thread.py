"""Threads: the conversation an agent reads and appends to.

Agents keep no conversation of their own; the engine hands them a thread on every
call. What the agent appends during a turn is what the turn produced.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable

from ratchet.types import Message, new_id

MESSAGES = "messages"
"""Thread kind: the whole conversation is held here and sent to the model each call."""
OPENAI_RESPONSES = "openai.responses"
"""Thread kind: the OpenAI Responses API stores the conversation; only its id travels."""


class Thread(ABC):
    """A conversation. ``messages`` may be local or a view of a remote store.

    ``kind`` says where the conversation lives; agents say which kinds they can
    work with (``Agent.thread_kinds``). A service-backed thread has a ``cursor``:
    the service's id for the conversation so far (e.g. the last response id).
    """

    id: str
    kind: str = MESSAGES
    cursor: str | None = None

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


class ServiceThread(ChatMessageThread):
    """A thread whose conversation a model service stores.

    ``messages`` holds only what the service has not seen yet (tool results from
    the previous turn, new user messages): the service has the rest, under
    ``cursor``. The model replaces ``cursor`` after each call.
    """

    def __init__(
        self,
        kind: str,
        *,
        id: str | None = None,
        cursor: str | None = None,
        unsent: Iterable[Message] = (),
    ) -> None:
        super().__init__(unsent, id=id)
        self.kind = kind
        self.cursor = cursor

    def __repr__(self) -> str:
        return f"ServiceThread(kind={self.kind!r}, id={self.id!r}, cursor={self.cursor!r})"
