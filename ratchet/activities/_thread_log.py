"""Thread logs by reference: a turn names log positions, the worker finds them.

A turn's input carries a ``ThreadRef`` (log id, length, id of the last message) and
the view of the log it sends; the worker takes those positions from its cache or
pages them in from the workflow runs that hold them (``ratchet.history._log_pages``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from temporalio.client import Client

from ratchet.errors import ThreadResolutionError
from ratchet.history import Holder, SegmentCache, fetch_range
from ratchet.types import Message, id_tag

from ._log_cache import LogEntry, ThreadCache, unstick


class LogNotCached(ThreadResolutionError):
    """A turn that cannot query (a local activity) lacks part of the log."""


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
            gaps=[],  # what is gone reads as placeholders: the turn goes on with the rest
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
