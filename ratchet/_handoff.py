"""A shortcut from a session's workflow to the turn it schedules in the same process."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from ratchet.types import Message, approximate_size, id_tag


class Handoff:
    """New messages a session's workflow hands to the turn it schedules, when that
    turn runs in the same worker process (the common case with one worker): the
    turn then needs no query for them. Only a shortcut: a batch is taken once,
    checked by the id of its last message, and a turn that finds nothing (another
    process, or evicted) pages the messages in as usual. Bounded by bytes."""

    def __init__(self, max_bytes: int = 16 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self._batches: OrderedDict[tuple[str, int], tuple[list[Message], int]] = OrderedDict()
        self._bytes = 0

    def offer(self, thread_id: str, start: int, messages: Sequence[Message]) -> None:
        size = sum(approximate_size(m) for m in messages)
        if not messages or size > self.max_bytes // 4:
            return
        self.take(thread_id, start, None)  # a replayed workflow offers again
        self._batches[(thread_id, start)] = (list(messages), size)
        self._bytes += size
        while self._bytes > self.max_bytes:
            _, (_, evicted) = self._batches.popitem(last=False)
            self._bytes -= evicted

    def take(self, thread_id: str, start: int, last_tag: str | None) -> list[Message] | None:
        found = self._batches.pop((thread_id, start), None)
        if found is None:
            return None
        self._bytes -= found[1]
        messages = found[0]
        return messages if last_tag is not None and id_tag(messages[-1].id) == last_tag else None


HANDOFF = Handoff()
"""This process's hand-off (workflows reach it because Ratchet's modules are passed
through the sandbox; under a runner that re-imports them it is never used)."""
