"""Thread logs by reference: a turn names log positions, the worker finds them.

A thread is an append-only log split across workflow runs: each run holds the
messages appended while it ran and names the run before it (``ThreadBase``) for
the earlier ones (a continued run's, a fork's or a rerun's source). A turn's
input carries a ``ThreadRef`` (log id, length, id of the last message) and the
view of the log it sends; the worker takes those positions from its cache or
pages them in with the ``ratchet.thread`` query, following the chain of runs back
as far as needed. A closed run answers a query only by a worker replaying it, so
a closed session run's part is read from its history instead (``log_history``)
when the run indexed it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from temporalio.client import Client, WorkflowQueryFailedError
from temporalio.service import RPCError

from ratchet.agents.messages import Message, id_tag
from ratchet.agents.state import ThreadBase
from ratchet.errors import ThreadResolutionError
from ratchet.wire.names import THREAD_QUERY
from ratchet.wire.turns import ThreadPage, ThreadPageRequest

from .log_history import Segment
from .log_segments import SegmentCache, closed_segment, read_ahead
from .threads import CacheStats, LogEntry, ThreadCache, unstick


class LogNotCached(ThreadResolutionError):
    """A turn that cannot query (a local activity) lacks part of the log."""


MAX_CHAIN = 10_000
"""Most workflow runs a page request follows back (a guard against a cycle)."""


class Holder:
    """A workflow run that holds (part of) a log, and the log's key there."""

    def __init__(self, workflow_id: str, run_id: str | None, thread_id: str) -> None:
        self.workflow_id = workflow_id
        self.run_id = run_id
        self.thread_id = thread_id

    @classmethod
    def of_base(cls, base: ThreadBase, thread_id: str) -> Holder:
        return cls(base.workflow_id, base.run_id, base.thread_id or thread_id)


async def fetch_range(
    client: Client,
    holder: Holder,
    start: int,
    end: int,
    *,
    page_bytes: int,
    stats: CacheStats | None = None,
    segments: SegmentCache | None = None,
    depth: int = 0,
) -> tuple[list[Message], str | None]:
    """Messages ``start`` to ``end`` of the log ``holder`` holds (following its
    bases), and the id of message ``start - 1`` when the holder knows it. A run
    named by its id that has closed is read from its history (``segments`` keeps
    what was read)."""
    if depth > MAX_CHAIN:
        raise ThreadResolutionError(f"Thread {holder.thread_id!r}: its chain of runs loops.")
    segment = await _from_history(client, holder, segments, stats)
    messages: list[Message] = []
    before_id: str | None = None
    position = start
    while position < end:
        if segment is not None:
            page = segment.page(position, end)
        else:
            page = await _query(client, holder, position, end, page_bytes, stats)
        if position == start:
            before_id = page.before_id
        if page.base is not None and position < page.base.version:
            upto = min(end, page.base.version)
            if segments is not None and depth == 0:
                continued = page.base.workflow_id == holder.workflow_id
                await read_ahead(client, page.base, position, upto, segments, continued=continued)
            earlier, earlier_before = await fetch_range(
                client,
                Holder.of_base(page.base, holder.thread_id),
                position,
                upto,
                page_bytes=page_bytes,
                stats=stats,
                segments=segments,
                depth=depth + 1,
            )
            if position == start:
                before_id = earlier_before
            messages += earlier
            position = upto
            continue
        if not page.messages:
            raise ThreadResolutionError(
                f"Workflow {holder.workflow_id!r} returned no messages of thread "
                f"{holder.thread_id!r} from position {position} (expected up to {end})."
            )
        messages += page.messages
        position = page.next
    return messages, before_id


async def _query(
    client: Client,
    holder: Holder,
    start: int,
    end: int,
    page_bytes: int,
    stats: CacheStats | None,
) -> ThreadPage:
    """The holder's answer to the ``ratchet.thread`` query for ``start`` to ``end``."""
    handle = client.get_workflow_handle(holder.workflow_id, run_id=holder.run_id)
    request = ThreadPageRequest(
        thread_id=holder.thread_id, start=start, end=end, max_bytes=page_bytes
    )
    try:
        page = await handle.query(THREAD_QUERY, request, result_type=ThreadPage)
    except (WorkflowQueryFailedError, RPCError) as e:
        raise ThreadResolutionError(
            f"Workflow {holder.workflow_id!r} (run {holder.run_id}) could not give messages "
            f"{start}-{end} of thread {holder.thread_id!r}: {e}"
        ) from e
    if stats is not None:
        stats.pages += 1
    return page


async def _from_history(
    client: Client, holder: Holder, segments: SegmentCache | None, stats: CacheStats | None
) -> Segment | None:
    """The holder's part of the log read from its history, if it is a closed run
    named by its id that indexed it (else it is asked by query)."""
    if holder.run_id is None:
        return None
    segment = await closed_segment(client, holder.workflow_id, holder.run_id, segments)
    if segment is None:
        return None
    if segment.info.thread_id != holder.thread_id:
        raise ThreadResolutionError(
            f"Workflow {holder.workflow_id!r} (run {holder.run_id}) holds thread "
            f"{segment.info.thread_id!r}, not {holder.thread_id!r}."
        )
    if stats is not None:
        stats.histories += 1
    return segment


async def resolve_log(
    cache: ThreadCache,
    client: Client | None,
    holder: Holder,
    *,
    length: int,
    last_tag: str | None,
    ranges: Sequence[tuple[int, int]],
    known: Mapping[int, Message] | None = None,
) -> Callable[[int], Message]:
    """Find the log positions in ``ranges`` (the log has ``length`` messages, the
    last one's ``id_tag`` is ``last_tag``): in ``known`` (handed over by the
    workflow), in the worker's cache, else paged in (``client``; ``None``: a local
    activity, which raises ``LogNotCached``). Returns a lookup by position; the
    cache keeps what was found."""
    found = dict(known or {})  # and what is paged in; the rest is the log entry's
    log = cache.log(holder.thread_id)
    if length and not log.confirm(length - 1, last_tag):
        cache.drop_log(holder.thread_id)  # it held another message there: start over
        log = cache.log(holder.thread_id)
    missing = _missing(log, ranges, found)
    if sum(b - a for a, b in ranges) > len(found):  # the cache was asked too
        cache.stats.misses += bool(missing)
        cache.stats.hits += not missing
    if missing:
        if client is None:
            raise LogNotCached(f"Thread {holder.thread_id!r} is not cached on this worker.")
        paged = await _page_in(client, cache, holder, log, missing)
        if paged is None:
            cache.drop_log(holder.thread_id)  # it held another log's messages: start over
            return await resolve_log(
                cache, client, holder, length=length, last_tag=None, ranges=ranges, known=known
            )
        found.update(paged)
    for start, batch in _runs(found, ranges, log):
        cache.log_changed(holder.thread_id, cache.log(holder.thread_id).put(start, batch))
    return _lookup(holder.thread_id, found, log.messages)


async def _page_in(
    client: Client,
    cache: ThreadCache,
    holder: Holder,
    log: LogEntry,
    missing: Sequence[tuple[int, int]],
) -> dict[int, Message] | None:
    """The ``missing`` ranges, paged in; ``None`` when the cache turns out to hold
    another log's messages next to them."""
    await unstick(client, holder.workflow_id, holder.run_id)
    segments = SegmentCache()  # closed runs of this log, read ahead for its ranges
    found: dict[int, Message] = {}
    for start, end in missing:
        messages, before_id = await fetch_range(
            client,
            holder,
            start,
            end,
            page_bytes=cache.page_bytes,
            stats=cache.stats,
            segments=segments,
        )
        if start and before_id and not log.confirm(start - 1, id_tag(before_id)):
            return None
        found.update(enumerate(messages, start))
    return found


def _missing(
    log: LogEntry, ranges: Sequence[tuple[int, int]], known: Mapping[int, Message]
) -> list[tuple[int, int]]:
    """The parts of ``ranges`` neither handed over nor cached (and confirmed), each
    from its first such position."""
    missing = []
    for start, end in ranges:
        if log.has(start, end):
            continue
        while start < end and (start in known or log.has(start, start + 1)):
            start += 1
        if start < end:
            missing.append((start, end))
    return missing


def _runs(
    found: Mapping[int, Message], ranges: Sequence[tuple[int, int]], log: LogEntry
) -> list[tuple[int, list[Message]]]:
    """The positions of ``ranges`` found here that the cache lacks, as batches of
    consecutive ones."""
    batches: list[tuple[int, list[Message]]] = []
    for start, end in ranges:
        for position in range(start, end):
            if position not in found or log.has(position, position + 1):
                continue
            if batches and batches[-1][0] + len(batches[-1][1]) == position:
                batches[-1][1].append(found[position])
            else:
                batches.append((position, [found[position]]))
    return batches


def _lookup(
    thread_id: str, found: Mapping[int, Message], cached: Mapping[int, Message]
) -> Callable[[int], Message]:
    """A lookup of what was found here, then of the cache entry (the entry itself: a
    later eviction from the cache does not take its messages from this turn)."""

    def message_at(position: int) -> Message:
        message = found.get(position) or cached.get(position)
        if message is None:
            raise ThreadResolutionError(
                f"Thread {thread_id!r}: message {position} was not given to this turn."
            )
        return message

    return message_at
