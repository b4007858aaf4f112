"""Session logs by reference: a turn names log positions, the worker finds them.

A session's thread is an append-only log split across its workflow runs: each
run holds the messages appended while it ran and names the run before it
(``ThreadBase``) for the earlier ones. A turn's input carries a ``ThreadRef``
(log id, length, id of the last message) and the view of the log the agent
sees; the worker takes those positions from its cache or pages them in with the
``ratchet.thread`` query, following the chain of runs back as far as needed.
A closed run answers a query only by a worker replaying it, so a closed run's
part is read from its history instead (``log_history``) when the run indexed it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from temporalio.client import Client, WorkflowQueryFailedError
from temporalio.service import RPCError

from ratchet.agents.messages import Message
from ratchet.agents.state import ThreadBase
from ratchet.errors import ThreadResolutionError
from ratchet.wire.names import THREAD_QUERY
from ratchet.wire.turns import ThreadPage, ThreadPageRequest

from .log_history import Segment
from .log_segments import SegmentCache, closed_segment, read_ahead
from .threads import CacheStats, ThreadCache, unstick


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
    segment = None
    if holder.run_id is not None:
        segment = await closed_segment(client, holder.workflow_id, holder.run_id, segments)
        if segment is not None:
            _check_thread(holder, segment)
            if stats is not None:
                stats.histories += 1
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
                await read_ahead(client, page.base, position, upto, segments)
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
        key=f"{holder.thread_id}#0", start=start, end=end, max_bytes=page_bytes
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


def _check_thread(holder: Holder, segment: Segment) -> None:
    if segment.info.thread_id != holder.thread_id:
        raise ThreadResolutionError(
            f"Workflow {holder.workflow_id!r} (run {holder.run_id}) holds thread "
            f"{segment.info.thread_id!r}, not {holder.thread_id!r}."
        )


async def resolve_log(
    cache: ThreadCache,
    client: Client | None,
    holder: Holder,
    *,
    length: int,
    last_id: str | None,
    ranges: Sequence[tuple[int, int]],
) -> Callable[[int], Message]:
    """Make sure the worker has the log positions in ``ranges`` (the log has
    ``length`` messages, the last one ``last_id``); returns a lookup by position."""
    log = cache.log(holder.thread_id)
    if length and not log.confirm(length - 1, last_id):
        cache.drop_log(holder.thread_id)  # it held another message there: start over
        log = cache.log(holder.thread_id)
    missing = [(a, b) for a, b in ranges if not log.has(a, b)]
    unstuck = False
    segments = SegmentCache()  # closed runs of this log, read ahead for its ranges
    if missing:
        cache.stats.misses += 1
    else:
        cache.stats.hits += 1
    for start, end in missing:
        # Fetch only what is not cached (or not confirmed) in this range.
        while start < end and log.has(start, start + 1):
            start += 1
        if start >= end:
            continue
        if client is None:
            raise LogNotCached(f"Thread {holder.thread_id!r} is not cached on this worker.")
        if not unstuck:
            await unstick(client, holder.workflow_id, holder.run_id)
            unstuck = True
        messages, before_id = await fetch_range(
            client,
            holder,
            start,
            end,
            page_bytes=cache.page_bytes,
            stats=cache.stats,
            segments=segments,
        )
        if start and not log.confirm(start - 1, before_id):
            cache.drop_log(holder.thread_id)
            return await resolve_log(
                cache, client, holder, length=length, last_id=None, ranges=ranges
            )
        cache.log_changed(holder.thread_id, log.put(start, messages))
        log = cache.log(holder.thread_id)
    messages = log.messages

    def message_at(position: int) -> Message:
        try:
            return messages[position]
        except KeyError:
            raise ThreadResolutionError(
                f"Thread {holder.thread_id!r}: message {position} is not in this worker's "
                "cache (evicted while the turn started); the turn is retried."
            ) from None

    return message_at
