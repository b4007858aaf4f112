"""Threads by reference: the turn activity gets a handle, not the whole thread.

A thread version is immutable (version ``v`` of a thread is its first ``v``
messages), so a worker can keep the versions it has seen. The workflow sends a
``ThreadRef`` (id, generation, version, id of the last message) plus only the
messages it added itself; the worker takes the prefix from its ``ThreadCache``
or, on a worker that has never seen the thread, pages it in from the workflow
that holds it with the ``ratchet.thread`` query. Each message is written to
history once: in the activity input or result of the turn that added it.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from temporalio import activity
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import ResetStickyTaskQueueRequest
from temporalio.client import Client, WorkflowQueryFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from ratchet.activities.owner import workflow_of
from ratchet.agents.messages import Message, approximate_size
from ratchet.errors import ThreadResolutionError
from ratchet.wire.names import PAGE_BYTES, THREAD_NOT_CACHED, THREAD_QUERY
from ratchet.wire.turns import ThreadPage, ThreadPageRequest, ThreadRef


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    evictions: int = 0
    pages: int = 0
    """Query answers fetched from workflows on misses."""
    histories: int = 0
    """Closed workflow runs whose part of a log was read from their history."""


class ThreadCache:
    """Per-worker LRU of thread versions and session logs, bounded by the JSON
    size of the messages.

    A thread entry holds the longest version of a thread the worker has seen; any
    shorter version is a prefix of it, checked by the id of its last message (ids
    are unique per message, so a prefix whose last id matches is that version).
    A log entry (``logs``) holds messages of a session's log by position.
    Messages are shared, not copied: agents must not mutate messages in a thread.
    """

    def __init__(self, max_bytes: int = 256 * 1024 * 1024, *, page_bytes: int = PAGE_BYTES) -> None:
        self.max_bytes = max_bytes
        self.page_bytes = page_bytes
        self.stats = CacheStats()
        self._entries: OrderedDict[str, tuple[list[Message], int] | LogEntry] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def get(self, ref: ThreadRef) -> list[Message] | None:
        entry = self._entries.get(ref.key)
        if isinstance(entry, tuple) and _holds(entry[0], ref):
            self._entries.move_to_end(ref.key)
            self.stats.hits += 1
            return entry[0][: ref.version]
        self.stats.misses += 1
        return None

    def put(self, key: str, messages: Sequence[Message]) -> None:
        """Remember a version of a thread (usually the previous one plus a turn)."""
        old = self._entries.get(key)
        known, total = 0, 0
        if isinstance(old, tuple) and 0 < len(old[0]) <= len(messages):
            if old[0][-1] is messages[len(old[0]) - 1]:  # the same prefix: size only the rest
                known, total = len(old[0]), old[1]
        self._drop(key)
        total += sum(_size(m) for m in messages[known:])
        if total > self.max_bytes:
            return  # larger than the whole cache: the next turn pages it in again
        self._entries[key] = (list(messages), total)
        self._bytes += total
        self._evict(keep=key)

    def log(self, thread_id: str) -> LogEntry:
        """The cached messages of a session's log (created empty), as most recently used."""
        key = f"log:{thread_id}"
        entry = self._entries.get(key)
        if not isinstance(entry, LogEntry):
            entry = LogEntry()
            self._entries[key] = entry
        self._entries.move_to_end(key)
        return entry

    def log_changed(self, thread_id: str, delta: int) -> None:
        """A log entry grew (or shrank) by ``delta`` bytes."""
        self._bytes += delta
        self._evict(keep=f"log:{thread_id}")

    def drop_log(self, thread_id: str) -> None:
        self._drop(f"log:{thread_id}")

    def _drop(self, key: str) -> None:
        old = self._entries.pop(key, None)
        if isinstance(old, tuple):
            self._bytes -= old[1]
        elif old is not None:
            self._bytes -= old.size

    def _evict(self, keep: str) -> None:
        while self._bytes > self.max_bytes and self._entries:
            key = next(iter(self._entries))
            if key == keep and len(self._entries) == 1:
                self._drop(key)  # larger than the whole cache on its own
                break
            if key == keep:
                self._entries.move_to_end(key)
                continue
            self._drop(key)
            self.stats.evictions += 1


class LogEntry:
    """Messages of one session log, by position. Positions a worker wrote itself
    from a turn result (``provisional``) are trusted only once a later reference
    names their last message: a result that was lost and retried elsewhere may
    have been committed with other messages."""

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

    def confirm(self, position: int, message_id: str | None) -> bool:
        """Check the cached message at ``position`` against the id the workflow gave
        for it: a match confirms the provisional batch holding it; ``False`` when
        the cache holds another message there (it must be dropped)."""
        cached = self.messages.get(position)
        if cached is None or message_id is None:
            return True
        if cached.id != message_id:
            return False
        self.provisional = [(a, b) for a, b in self.provisional if not a <= position < b]
        return True

    def put(self, start: int, messages: Sequence[Message], *, provisional: bool = False) -> int:
        """Store ``messages`` at ``start``...; returns the change in bytes."""
        delta = 0
        for offset, message in enumerate(messages):
            old = self.messages.get(start + offset)
            if old is not None:
                delta -= _size(old)
            self.messages[start + offset] = message
            delta += _size(message)
        if provisional and messages:
            self.provisional.append((start, start + len(messages)))
        self.size += delta
        return delta


def _holds(messages: list[Message], ref: ThreadRef) -> bool:
    if len(messages) < ref.version:
        return False
    if ref.version == 0:
        return True
    return messages[ref.version - 1].id == ref.last_id


def _size(message: Message) -> int:
    return approximate_size(message)


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


async def fetch_thread(
    client: Client,
    ref: ThreadRef,
    *,
    prefix: Sequence[Message] = (),
    page_bytes: int = PAGE_BYTES,
    stats: CacheStats | None = None,
) -> list[Message]:
    """Page a thread version in from the workflow that holds it, after ``prefix``
    (messages already known, such as a base held by another workflow)."""
    if ref.workflow_id is None:
        workflow_id, run_id = workflow_of(activity.info())
        ref = ref.model_copy(update={"workflow_id": workflow_id, "run_id": run_id})
    handle = client.get_workflow_handle(ref.workflow_id or "", run_id=ref.run_id)
    messages: list[Message] = list(prefix)
    while len(messages) < ref.version:
        try:
            page = await handle.query(
                THREAD_QUERY,
                ThreadPageRequest(
                    key=ref.key, start=len(messages), end=ref.version, max_bytes=page_bytes
                ),
                result_type=ThreadPage,
            )
        except WorkflowQueryFailedError as e:
            raise ThreadResolutionError(
                f"Workflow {ref.workflow_id!r} could not give thread {ref.key!r}: {e}"
            ) from e
        if stats is not None:
            stats.pages += 1
        if not page.messages:
            raise ThreadResolutionError(
                f"Workflow {ref.workflow_id!r} returned no messages for thread {ref.key!r} "
                f"from index {len(messages)} (expected {ref.version})."
            )
        messages += page.messages
    if not _holds(messages, ref):
        raise ThreadResolutionError(
            f"Thread {ref.key!r} from workflow {ref.workflow_id!r} does not match the turn's "
            f"reference (version {ref.version}, last message {ref.last_id!r})."
        )
    return messages[: ref.version]


async def resolve_thread(cache: ThreadCache, ref: ThreadRef) -> list[Message]:
    """The messages of ``ref``: from this worker's cache, else from the workflow."""
    if ref.version == 0:
        return []
    cached = cache.get(ref)
    if cached is not None:
        return cached
    if activity.info().is_local:
        # The workflow is blocked on this local activity and cannot answer a query;
        # it takes the turn again with the thread inline.
        raise ApplicationError(
            f"Thread {ref.key} version {ref.version} is not cached on this worker.",
            type=THREAD_NOT_CACHED,
            non_retryable=True,
        )
    client = activity.client()
    await unstick(client, ref.workflow_id, ref.run_id)
    prefix: list[Message] = []
    base = ref.base_ref()
    if base is not None:
        # The first messages are held by another workflow (the session of this run).
        prefix = cache.get(base) or await _fetch_base(client, ref, base, cache)
    messages = await fetch_thread(
        client, ref, prefix=prefix, page_bytes=cache.page_bytes, stats=cache.stats
    )
    cache.put(ref.key, messages)
    return messages


async def _fetch_base(
    client: Client, ref: ThreadRef, base: ThreadRef, cache: ThreadCache
) -> list[Message]:
    """The messages of ``ref``'s base: a session's run's own thread (legacy sessions),
    or another thread's log (a run started from a session's log, as a rerun case is),
    which may span that session's workflow runs."""
    from .thread_log import Holder, fetch_range  # it builds on this module

    if ref.base is None or ref.base.thread_id is None:
        return await fetch_thread(client, base, page_bytes=cache.page_bytes, stats=cache.stats)
    holder = Holder.of_base(ref.base, ref.id)
    messages, _ = await fetch_range(
        client, holder, 0, base.version, page_bytes=cache.page_bytes, stats=cache.stats
    )
    if not _holds(messages, base):
        raise ThreadResolutionError(
            f"The log of thread {base.id!r} in workflow {base.workflow_id!r} does not match "
            f"the run's reference (version {base.version}, last message {base.last_id!r})."
        )
    cache.put(base.key, messages)
    return messages
