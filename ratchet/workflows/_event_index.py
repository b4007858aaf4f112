"""Where this workflow run's events are in its own history.

The run's event stream holds two kinds of events: those a turn sent by signal
(streamed text, its tool calls as they happened), which the run's history holds
as they came, and those the workflow published itself (``run_started``, status
changes, turn ends, tool results settled at a turn's end), which no event of the
history holds. The index counts the first kind in place and keeps the second
whole, so a reader rebuilds the stream from the closed run's history, without a
worker (``wire._run_record.EventIndex``).
"""

from __future__ import annotations

from collections import deque

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ratchet.wire import EVENT_BYTES_KEPT, EventIndex

NUMBER_BYTES = 8


class EventIndexer:
    """Follows the run's stream as the workflow publishes to it."""

    def __init__(self, start: int) -> None:
        self._start = start
        self._end = start
        """Offset after the last event accounted for."""
        self._skip = 0
        self._entries: deque[int | str | list[int | str]] = deque()
        self._bytes = 0

    def published(
        self, offset: int, data: bytes, text_of: tuple[str, bytes, int] | None = None
    ) -> None:
        """The workflow published the event ``data`` (its JSON) at ``offset``; the
        events since the last one accounted for came by signal. ``text_of``: the
        event's text is message ``id``'s (cut to ``limit``), and ``without`` is its
        JSON without it (``(id, without, limit)``)."""
        self._signalled(offset)
        if text_of is not None:
            message_id, without, limit = text_of
            entry: int | str | list[int | str] = [message_id, without.decode(), limit]
            size = len(message_id) + len(without) + NUMBER_BYTES
        else:
            entry = data.decode()
            size = len(entry)
        self._entries.append(entry)
        self._bytes += size
        self._end = offset + 1
        while self._bytes > EVENT_BYTES_KEPT and self._entries:
            dropped = self._entries.popleft()
            if isinstance(dropped, int):
                self._start += dropped
                self._skip += dropped
                self._bytes -= NUMBER_BYTES
            else:
                self._start += 1
                self._bytes -= _size(dropped)

    def _signalled(self, upto: int) -> None:
        if upto > self._end:
            self._entries.append(upto - self._end)
            self._bytes += NUMBER_BYTES
            self._end = upto

    def index(self, end: int) -> EventIndex:
        """The index as the run ends, its stream ending at offset ``end``."""
        self._signalled(end)
        return EventIndex(
            start=self._start, end=self._end, skip=self._skip, entries=list(self._entries)
        )


def _size(entry: str | list[int | str]) -> int:
    if isinstance(entry, str):
        return len(entry)
    return sum(len(part) if isinstance(part, str) else NUMBER_BYTES for part in entry)
