"""Which closed workflow runs to read a session's log from, and keeping what was read.

A closed run never changes, so its part of the log (``log_events.Segment``) can
be kept. Reading a long log back through a chain of closed runs one after the
other would wait on each history in turn; the chain is cheap to walk (each run's
first event names the run before it), so the runs are found first and their
histories read a few at a time.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from ratchet.errors import HistoryGoneError, ThreadResolutionError
from ratchet.types import ThreadBase, approximate_size
from ratchet.wire import SESSION_WORKFLOW

from ._log_events import Segment, run_history, segment_of, started_input

READ_AHEAD = 4
"""Closed runs whose histories are read at once."""
RUN_BYTES = 2 * 1024 * 1024
"""About the most messages a session's workflow run holds (it continues as new past
8 MB of history): read no more runs ahead than the cache keeps."""
BASES_KEPT = 100_000


class SegmentCache:
    """Closed runs' segments, least recently used dropped first, bounded by the
    messages' JSON size; and which run each run read continued (small, kept longer)."""

    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self._segments: OrderedDict[tuple[str, str], tuple[Segment, int]] = OrderedDict()
        self._bytes = 0
        self._bases: OrderedDict[tuple[str, str], ThreadBase | None] = OrderedDict()

    def get(self, workflow_id: str, run_id: str) -> Segment | None:
        found = self._segments.get((workflow_id, run_id))
        if found is None:
            return None
        self._segments.move_to_end((workflow_id, run_id))
        return found[0]

    def put(self, workflow_id: str, run_id: str, segment: Segment) -> None:
        self.link(workflow_id, run_id, segment.base)
        size = sum(approximate_size(m) for m in segment.messages)
        if size > self.max_bytes or (workflow_id, run_id) in self._segments:
            return
        self._segments[(workflow_id, run_id)] = (segment, size)
        self._bytes += size
        while self._bytes > self.max_bytes:
            _, (_, dropped) = self._segments.popitem(last=False)
            self._bytes -= dropped

    def link(self, workflow_id: str, run_id: str, base: ThreadBase | None) -> None:
        """Run ``run_id`` continued the log of ``base`` (``None``: it began it)."""
        self._bases[(workflow_id, run_id)] = base
        while len(self._bases) > BASES_KEPT:
            self._bases.popitem(last=False)

    def base_of(self, workflow_id: str, run_id: str) -> tuple[bool, ThreadBase | None]:
        """Whether it is known which run ``run_id`` continued, and that run."""
        key = (workflow_id, run_id)
        return key in self._bases, self._bases.get(key)


async def closed_segment(
    client: Client,
    workflow_id: str,
    run_id: str,
    cache: SegmentCache | None = None,
    *,
    continued: bool = False,
) -> Segment | None:
    """Run ``run_id``'s part of the log, read from its history; ``None`` when the
    run is open or did not index its part (then ask it by query). ``continued``:
    the run is known to be a session's that continued as new (so closed)."""
    if cache is not None and (found := cache.get(workflow_id, run_id)) is not None:
        return found
    if not continued and not await _closed_session_run(client, workflow_id, run_id):
        return None
    events = await run_history(client, workflow_id, run_id)
    segment = await segment_of(events, client.data_converter)
    if segment is not None and cache is not None:
        cache.put(workflow_id, run_id, segment)
    return segment


async def _closed_session_run(client: Client, workflow_id: str, run_id: str) -> bool:
    """Whether the run is a session's and has closed: asking an open run for its
    close event would wait for it to close, and only a session's runs index their
    part of the log."""
    try:
        described = await client.get_workflow_handle(workflow_id, run_id=run_id).describe()
    except RPCError as e:
        if e.status == RPCStatusCode.NOT_FOUND:
            raise HistoryGoneError(workflow_id, run_id, 0, 0) from e
        raise ThreadResolutionError(
            f"Could not describe workflow {workflow_id!r} (run {run_id}): {e}"
        ) from e
    running = described.status == WorkflowExecutionStatus.RUNNING
    return not running and described.workflow_type == SESSION_WORKFLOW


async def read_ahead(
    client: Client,
    base: ThreadBase,
    start: int,
    end: int,
    cache: SegmentCache,
    *,
    continued: bool = False,
) -> None:
    """Read into ``cache`` the runs of the chain that starts at ``base`` that hold
    log positions ``start`` to ``end``, a few at once, each as soon as the walk
    back along the chain finds it (``continued``: ``base`` continued as new into
    the run that named it). What this cannot find or read is left to the reading
    itself."""
    slots = asyncio.Semaphore(READ_AHEAD)
    reads: list[asyncio.Task[Segment | None]] = []

    async def read(workflow_id: str, run_id: str, continued: bool) -> Segment | None:
        async with slots:
            try:
                return await closed_segment(client, workflow_id, run_id, cache, continued=continued)
            except HistoryGoneError:
                return None  # the reading names the gap

    holder: ThreadBase | None = base
    try:
        # An anchored base's run holds the rest itself: the reading reads it.
        while holder and holder.run_id and holder.version > start and holder.anchor is None:
            key = (holder.workflow_id, holder.run_id)
            known, earlier = cache.base_of(*key)
            if not known:
                known, earlier = await _base_of(client, cache, *key)
            if not known:
                break  # gone, or not a session's run: the reading names it, or asks it
            wanted = (earlier.version if earlier else 0) < end and cache.get(*key) is None
            if wanted and len(reads) < cache.max_bytes // RUN_BYTES:
                reads.append(asyncio.create_task(read(*key, continued)))
            # The run before one of the same workflow continued as new into it.
            continued = earlier is not None and earlier.workflow_id == holder.workflow_id
            holder = earlier
    except BaseException:
        for task in reads:
            task.cancel()
        raise
    await asyncio.gather(*reads)


async def _base_of(
    client: Client, cache: SegmentCache, workflow_id: str, run_id: str
) -> tuple[bool, ThreadBase | None]:
    """Which run session run ``run_id`` continued, from its first event (kept in
    ``cache``); ``(False, None)``: not a session's run, or gone."""
    try:
        first = await run_history(client, workflow_id, run_id, first_only=True)
    except HistoryGoneError:
        return False, None
    started = await started_input(first[0], client.data_converter) if first else None
    if started is None:
        return False, None
    earlier = started.session.thread.base if started.session else None
    cache.link(workflow_id, run_id, earlier)
    return True, earlier
