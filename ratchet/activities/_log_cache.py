"""A worker's cache of thread logs, so a turn rarely asks its workflow for messages.

A thread is an append-only log: position ``p`` holds the same message for ever, so
a worker can keep every message it has seen of a log, by position, and trust it
once the workflow has named its last message. A turn's input names positions
(``ThreadRef``, view); the worker takes them from its ``ThreadCache`` and pages in
only what it lacks (``thread_log.resolve_log``).
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Sequence

from temporalio import activity
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import ResetStickyTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError

from ratchet.activities._owner import workflow_of
from ratchet.history import CacheStats
from ratchet.types import Message, approximate_size, id_tag
from ratchet.wire import PAGE_BYTES


class ThreadCache:
    """Per-worker LRU of thread logs, bounded by the JSON size of their messages.

    Messages are shared, not copied: agents must not mutate messages in a thread.
    """

    def __init__(self, max_bytes: int = 256 * 1024 * 1024, *, page_bytes: int = PAGE_BYTES) -> None:
        self.max_bytes = max_bytes
        self.page_bytes = page_bytes
        self.stats = CacheStats()
        self._logs: OrderedDict[str, LogEntry] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._logs)

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def log(self, thread_id: str) -> LogEntry:
        """The cached messages of a log (created empty), as most recently used."""
        entry = self._logs.get(thread_id)
        if entry is None:
            entry = self._logs[thread_id] = LogEntry()
        self._logs.move_to_end(thread_id)
        return entry

    def log_changed(self, thread_id: str, delta: int) -> None:
        """A log entry grew (or shrank) by ``delta`` bytes."""
        self._bytes += delta
        self._evict(keep=thread_id)

    def drop_log(self, thread_id: str) -> None:
        old = self._logs.pop(thread_id, None)
        if old is not None:
            self._bytes -= old.size

    def _evict(self, keep: str) -> None:
        while self._bytes > self.max_bytes and self._logs:
            thread_id = next(iter(self._logs))
            if thread_id == keep and len(self._logs) == 1:
                self.drop_log(thread_id)  # larger than the whole cache on its own
                break
            if thread_id == keep:
                self._logs.move_to_end(thread_id)
                continue
            self.drop_log(thread_id)
            self.stats.evictions += 1


class LogEntry:
    """Messages of one log, by position. Positions a worker wrote itself from a
    turn result (``provisional``) are trusted only once a later reference names
    their last message: a result that was lost and retried elsewhere may have been
    committed with other messages."""

    def __init__(self) -> None:
        self.messages: dict[int, Message] = {}
        self.provisional: list[tuple[int, int]] = []
        self.size = 0

    def has(self, start: int, end: int) -> bool:
        """Whether positions ``start`` to ``end`` are all cached and confirmed."""
        if any(a < end and start < b for a, b in self.provisional):
            return False
        messages = self.messages
        return all(p in messages for p in range(start, end))

    def confirm(self, position: int, tag: str | None) -> bool:
        """Check the cached message at ``position`` against the ``id_tag`` the
        workflow gave for it: a match confirms the provisional batch holding it;
        ``False`` when the cache holds another message there (it must be dropped)."""
        cached = self.messages.get(position)
        if cached is None or tag is None:
            return True
        if id_tag(cached.id) != tag:
            return False
        self.provisional = [(a, b) for a, b in self.provisional if not a <= position < b]
        return True

    def put(self, start: int, messages: Sequence[Message], *, provisional: bool = False) -> int:
        """Store ``messages`` at ``start``...; returns the change in bytes."""
        delta = 0
        for offset, message in enumerate(messages):
            old = self.messages.get(start + offset)
            if old is not None:
                delta -= approximate_size(old)
            self.messages[start + offset] = message
            delta += approximate_size(message)
        if provisional and messages:
            self.provisional.append((start, start + len(messages)))
        self.size += delta
        return delta


async def unstick(client: Client, workflow_id: str | None, run_id: str | None) -> None:
    """Before a retried turn queries its own workflow for the thread: the worker of
    the attempt before may have died, and with it the workflow's sticky queue, where
    a query waits for the sticky timeout before going elsewhere. Resetting stickiness
    sends the query to the task queue, where any live worker answers at once; the
    cost is one full replay on the workflow's next task. Only on attempts after the
    first, only for the turn's own workflow."""
    if not activity.in_activity():
        return
    info = activity.info()
    own_id, own_run = workflow_of(info)
    if info.attempt < 2 or info.is_local or workflow_id not in (None, own_id):
        return
    request = ResetStickyTaskQueueRequest(
        namespace=client.namespace,
        execution=WorkflowExecution(workflow_id=own_id, run_id=run_id or own_run),
    )
    with contextlib.suppress(RPCError):  # a closed run has no stickiness to reset
        await client.workflow_service.reset_sticky_task_queue(request)
