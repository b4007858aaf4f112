"""The threads AG-UI runs read, kept between runs on this process.

Every AG-UI run reads its thread: what the client sends is checked against it, and
the run's end is compared with it. A thread only grows (its log keeps every
message), so this process keeps the messages it read of its latest threads and
reads only those that came after, when the part read follows what it keeps (it
reads from the message kept last, and that must be the one it kept; else, say for
a thread deleted and started again under its id, it reads the thread whole). A
2,000-message thread is then read in milliseconds, not in a few hundred (its 4 MB
through a query).
"""

from __future__ import annotations

from collections import OrderedDict

from ratchet.client import SessionHandle
from ratchet.types import Message

THREADS = 64
"""Threads kept, the latest used."""
MESSAGES = 100_000
"""Messages kept in all, at most (their text included: a few hundred MB at worst)."""


class Threads:
    """The threads this process read lately, by session id."""

    def __init__(self, threads: int = THREADS, messages: int = MESSAGES) -> None:
        self._kept: OrderedDict[str, list[Message]] = OrderedDict()
        self._limits = (threads, messages)

    async def read(self, session: SessionHandle) -> list[Message]:
        """The session's thread as it is now (a new list: the caller may keep it)."""
        kept = self._kept.pop(session.id, None)
        messages = await self._after(session, kept) if kept else None
        if messages is None:
            messages = (await session.thread()).messages
        self._keep(session.id, messages)
        return list(messages)

    @staticmethod
    async def _after(session: SessionHandle, kept: list[Message]) -> list[Message] | None:
        """``kept`` and the messages after it, or ``None`` if they do not follow it
        (the part read starts with the message kept last)."""
        part = (await session.thread(after=len(kept) - 1)).messages
        if not part or part[0].id is None or part[0].id != kept[-1].id:
            return None
        return kept + part[1:]

    def _keep(self, session_id: str, messages: list[Message]) -> None:
        self._kept[session_id] = messages
        threads, most = self._limits
        total = sum(len(m) for m in self._kept.values())
        while len(self._kept) > 1 and (len(self._kept) > threads or total > most):
            _, dropped = self._kept.popitem(last=False)
            total -= len(dropped)
