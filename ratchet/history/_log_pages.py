"""A thread log's pages, read from the workflow runs that hold it.

A thread is an append-only log split across workflow runs: each run holds the
messages appended while it ran and names the run before it (``ThreadBase``) for
the earlier ones (a continued run's, a fork's or a rerun's source). ``fetch_range``
pages a range of it in with the ``ratchet.thread`` query, following the chain of
runs back as far as needed. A closed run answers a query only by a worker replaying
it, so a closed session run's part is read from its history instead
(``log_events``) when the run indexed it. The client reads threads with it; so does
a turn that lacks part of its log (``ratchet/activities/_thread_log.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from temporalio.client import Client, WorkflowQueryFailedError
from temporalio.service import RPCError, RPCStatusCode

from ratchet.errors import HistoryGoneError, ThreadResolutionError
from ratchet.types import Gap, Message, ThreadBase
from ratchet.wire import THREAD_QUERY, ThreadPage, ThreadPageRequest

from ._anchors import anchor_segment, gap_messages
from ._log_events import Segment
from ._log_segments import SegmentCache, closed_segment, read_ahead


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    evictions: int = 0
    pages: int = 0
    """Query answers fetched from workflows on misses."""
    histories: int = 0
    """Closed workflow runs whose part of a log was read from their history."""


MAX_CHAIN = 10_000
"""Most workflow runs a page request follows back (a guard against a cycle)."""


class Holder:
    """A workflow run that holds (part of) a log, and the log's key there."""

    def __init__(
        self, workflow_id: str, run_id: str | None, thread_id: str, anchor: int | None = None
    ) -> None:
        self.workflow_id = workflow_id
        self.run_id = run_id
        self.thread_id = thread_id
        self.anchor = anchor
        """The run's ``anchor``-th copy of the log's start holds what is asked
        (``ThreadBase.anchor``), not the run's own part."""

    @classmethod
    def of_base(cls, base: ThreadBase, thread_id: str) -> Holder:
        if base.anchor is not None:  # the copy is this thread's own
            return cls(base.workflow_id, base.run_id, thread_id, base.anchor)
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
    gaps: list[Gap] | None = None,
    depth: int = 0,
) -> tuple[list[Message], str | None]:
    """Messages ``start`` to ``end`` of the log ``holder`` holds (following its
    bases), and the id of message ``start - 1`` when the holder knows it. A run
    named by its id that has closed is read from its history (``segments`` keeps
    what was read). Positions held by a run that is gone raise
    ``HistoryGoneError``; with ``gaps`` given they are placeholders
    (``history._anchors.gap_messages``) and each such range is added to ``gaps``."""
    if depth > MAX_CHAIN:
        raise ThreadResolutionError(f"Thread {holder.thread_id!r}: its chain of runs loops.")
    reading = _Reading(client, page_bytes, stats, segments, gaps)
    try:
        segment = await _from_history(client, holder, segments, stats)
    except HistoryGoneError as e:
        return _gone(holder, start, end, gaps, e), None
    if segment is not None and gaps is not None:
        gaps += [g for g in segment.gaps if g.start < end and g.end > start]
    messages: list[Message] = []
    before_id: str | None = None
    position = start
    while position < end:
        page = await reading.page(holder, segment, position, end)
        if page is None:  # the holder is gone
            messages += _gone(holder, position, end, gaps, None)
            break
        if page.base is not None and position < page.base.version:
            upto = min(end, page.base.version)
            earlier, earlier_before = await reading.base(holder, page.base, position, upto, depth)
            if position == start:
                before_id = earlier_before
            messages += earlier
            position = upto
            continue
        if position == start:
            before_id = page.before_id
        if not page.messages:
            raise ThreadResolutionError(
                f"Workflow {holder.workflow_id!r} returned no messages of thread "
                f"{holder.thread_id!r} from position {position} (expected up to {end})."
            )
        messages += page.messages
        position = page.next
    return messages, before_id


@dataclass
class _Reading:
    """What one ``fetch_range`` call reads with, handed down the chain of runs."""

    client: Client
    page_bytes: int
    stats: CacheStats | None
    segments: SegmentCache | None
    gaps: list[Gap] | None

    async def page(
        self, holder: Holder, segment: Segment | None, start: int, end: int
    ) -> ThreadPage | None:
        """The holder's page from ``start``: from its history, else by query;
        ``None`` if it is gone."""
        if segment is not None:
            return segment.page(start, end)
        try:
            return await _query(self.client, holder, start, end, self.page_bytes, self.stats)
        except HistoryGoneError:
            return None

    async def base(
        self, holder: Holder, base: ThreadBase, start: int, end: int, depth: int
    ) -> tuple[list[Message], str | None]:
        """Positions ``start`` to ``end``, from the run ``holder``'s page named."""
        if self.segments is not None and depth == 0:
            continued = base.workflow_id == holder.workflow_id
            await read_ahead(self.client, base, start, end, self.segments, continued=continued)
        return await fetch_range(
            self.client,
            Holder.of_base(base, holder.thread_id),
            start,
            end,
            page_bytes=self.page_bytes,
            stats=self.stats,
            segments=self.segments,
            gaps=self.gaps,
            depth=depth + 1,
        )


def _gone(
    holder: Holder, start: int, end: int, gaps: list[Gap] | None, error: HistoryGoneError | None
) -> list[Message]:
    """Placeholders for positions ``start`` to ``end``, held by a run that is gone
    (named in ``gaps``); without ``gaps``, ``HistoryGoneError`` naming them."""
    if gaps is None:
        raise HistoryGoneError(holder.workflow_id, holder.run_id, start, end) from error
    gap = Gap(start=start, end=end, workflow_id=holder.workflow_id, run_id=holder.run_id)
    gaps.append(gap)
    return gap_messages(gap)


DEFINITE = frozenset({
    RPCStatusCode.NOT_FOUND,
    RPCStatusCode.INVALID_ARGUMENT,
    RPCStatusCode.PERMISSION_DENIED,
    RPCStatusCode.UNAUTHENTICATED,
    RPCStatusCode.UNIMPLEMENTED,
})  # fmt: skip
"""A query's RPC failures that another try would meet again."""


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
        if isinstance(e, RPCError) and e.status == RPCStatusCode.NOT_FOUND and holder.run_id:
            raise HistoryGoneError(holder.workflow_id, holder.run_id, 0, 0) from e
        if isinstance(e, RPCError) and e.status not in DEFINITE:
            # The worker answering it was killed ("context canceled"), the query timed
            # out, the server is busy: another attempt may get the page (a turn
            # attempt fails retryably, from its checkpoint).
            raise
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
    if holder.anchor is not None:
        return await anchor_segment(
            client, holder.workflow_id, holder.run_id, holder.thread_id, holder.anchor, segments
        )
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
