"""One history watch and one query at a time per workflow, for all its readers in a
process (client side).

The server holds few queries per workflow while a workflow task runs ("consistent
query buffer is full" past that), and each query is a billed action on Temporal
Cloud. So the readers of one workflow in one process share one ``HistoryWatch``
and take turns to query. A reader woken by a change takes the last poll of the
latest run if that poll began after the change and covers the reader's offset
(readers at the live end mostly do); else it polls itself, and the readers after
it may take its answer. Each reader keeps its own offset.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from weakref import WeakKeyDictionary

from temporalio.client import Client
from temporalio.contrib.workflow_streams import PollResult

from ._earlier_runs import poll
from ._follow import HistoryWatch


@dataclass(frozen=True)
class _Polled:
    version: int
    """The watch's version when the poll began: it shows every change up to that one."""
    asked: int
    result: PollResult

    def covers(self, offset: int) -> bool:
        return self.asked <= offset and (
            not self.result.more_ready or offset < self.result.next_offset
        )

    def since(self, offset: int) -> PollResult:
        items = [item for item in self.result.items if item.offset >= offset]
        return PollResult(
            items=items, next_offset=self.result.next_offset, more_ready=self.result.more_ready
        )


class SharedPoll:
    """The readers of one workflow in this process: their ``watch``, and the ``lock``
    a reader holds while it queries the workflow."""

    def __init__(self, client: Client, workflow_id: str) -> None:
        self.lock = asyncio.Lock()
        self.readers = 0
        self.client, self._id = client, workflow_id
        self._watch: HistoryWatch | None = None
        self._last: _Polled | None = None

    def watch(self) -> HistoryWatch:
        """The workflow's watch, started by the first reader that follows."""
        if self._watch is None:
            self._watch = HistoryWatch(self.client, self._id)
        return self._watch

    async def latest(self, offset: int, version: int | None) -> PollResult:
        """The latest run's events from ``offset``, as a poll begun at the watch's
        ``version`` or later shows them (hold ``lock``); ``None``: a poll begun now.
        A watch that is not following the history cannot tell what is fresh: then
        it always polls."""
        watch, last = self._watch, self._last
        fresh = watch is not None and watch.following and version is not None
        if fresh and last and last.version >= (version or 0) and last.covers(offset):
            return last.since(offset)
        began = watch.version if watch is not None else -1
        result = await poll(self.client.get_workflow_handle(self._id), offset)
        self._last = _Polled(began, offset, result)
        return result

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()


_shared: WeakKeyDictionary[Client, dict[tuple[asyncio.AbstractEventLoop, str], SharedPoll]] = (
    WeakKeyDictionary()
)


@contextmanager
def shared_poll(client: Client, workflow_id: str) -> Iterator[SharedPoll]:
    """The workflow's ``SharedPoll`` in this process while the caller reads; its
    watch stops with its last reader."""
    polls = _shared.setdefault(client, {})
    key = (asyncio.get_running_loop(), workflow_id)
    shared = polls.get(key)
    if shared is None:
        shared = polls[key] = SharedPoll(client, workflow_id)
    shared.readers += 1
    try:
        yield shared
    finally:
        shared.readers -= 1
        if not shared.readers:
            del polls[key]
            shared.close()
