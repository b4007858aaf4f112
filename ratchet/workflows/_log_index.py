"""Where this workflow run's part of a session's log is in its own history.

A closed run answers a query only by a worker replaying its whole history, so
readers of a long session's thread read closed runs' histories instead. Every
message the run appends to the log is in its history already, in a batch as
it was appended: a send's messages (its Update, or the queue the run started
with), a turn's output, a tool activity's result, the thread the run started
with. The only exceptions are messages the workflow makes itself (a rejection,
an answer, a stop note), which go into the index whole. The run writes the
index as it ends (``wire.session_data.LogIndex``).
"""

from __future__ import annotations

from collections.abc import Sequence

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ratchet.types import Message, ThreadData, approximate_size
    from ratchet.wire import KEY_CHARS, LogIndex, LogInfo, batch_key, ids_digest

INDEX_BYTES_CARRIED = 64 * 1024
"""A session continues as new once its index is this big (it goes into the next
run's input)."""
INLINE_MAX_BYTES = 256 * 1024
"""A message the workflow made that is bigger than this is not indexed: the run's
part of the log is then read by query (a replay) instead."""


class LogIndexer:
    """Records, as the run appends to the log, where each message is in its history."""

    def __init__(self, start: int) -> None:
        self._start = start
        self._held: dict[str, list[str]] = {}
        """Batches the run's history holds as they are: their ids, by the first one."""
        self._entries: list[Message | str] | None = []
        """``None``: a message too big to index was appended (the index is given up)."""
        self.bytes = 0
        """About the JSON size of the index."""

    def held(self, messages: Sequence[Message]) -> None:
        """``messages`` are one batch of this run's history, as they are."""
        ids = [m.id for m in messages]
        if ids and all(ids):
            self._held[ids[0]] = ids

    def appended(self, messages: Sequence[Message]) -> None:
        """``messages`` were appended to the log, in this order."""
        entries, at = self._entries, 0
        while entries is not None and at < len(messages):
            ids = self._held.get(messages[at].id, [])
            if ids and [m.id for m in messages[at : at + len(ids)]] == ids:
                if entries and isinstance(entries[-1], str):
                    entries[-1] += batch_key(ids[-1])
                else:
                    entries.append(batch_key(ids[-1]))
                self.bytes += KEY_CHARS
                at += len(ids)
                continue
            size = approximate_size(messages[at])
            if size > INLINE_MAX_BYTES:
                self._entries = entries = None
                break
            entries.append(messages[at])
            self.bytes += size
            at += 1

    def index(self, thread: ThreadData, info: LogInfo) -> LogIndex | None:
        """The index of the run's part of ``thread``, whose messages are this run's
        (``None``: given up)."""
        if self._entries is None:
            return None
        return LogIndex(
            info=info,
            start=self._start,
            entries=list(self._entries),
            digest=ids_digest(thread.messages),
        )
