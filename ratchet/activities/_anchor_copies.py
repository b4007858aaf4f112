"""The worker's side of re-anchoring (``ratchet.workflows._anchoring``): copying the
start of a thread into the calling run's history, and the horizon it is due by.

The copy is the activity's result, so Temporal writes it into the calling run's
history; ``ratchet.history._anchors`` reads it back from there. Messages already
gone (a run deleted before this ran) are copied as placeholders, and the gap is
named, so a session goes on with what remains.
"""

from __future__ import annotations

import time
from datetime import timedelta

from temporalio import activity
from temporalio.exceptions import ApplicationError

from ratchet.errors import ThreadResolutionError
from ratchet.history import Holder, SegmentCache, fetch_range, namespace_retention
from ratchet.types import Gap, Message, approximate_size
from ratchet.wire import (
    ANCHOR_ACTIVITY,
    HORIZON_ACTIVITY,
    PAGE_BYTES,
    AnchorChunk,
    AnchorRequest,
    Horizon,
)

HORIZON_SHARE = 0.5
"""The part of the namespace's retention a thread relies on a closed run for: it
re-anchors half a retention after the run closed, with the other half to spare
(for a worker outage, a retention shortened meanwhile)."""
STEP = 200
"""Positions read at once while copying."""
NAMESPACE_READ_EVERY = 60.0
"""Seconds a worker keeps the namespace's retention it read."""


class AnchorCopies:
    """Activities that re-anchor threads; ``horizon`` set: the worker's own, instead
    of a share of the namespace's retention."""

    def __init__(self, horizon: timedelta | None = None) -> None:
        self._horizon = horizon
        self._read: tuple[float, Horizon] | None = None

    @activity.defn(name=ANCHOR_ACTIVITY)
    async def copy(self, request: AnchorRequest) -> AnchorChunk:
        """Positions ``request.start`` on of what ``request.base`` names, up to about
        ``request.max_bytes`` of them."""
        client = activity.client()
        holder = Holder.of_base(request.base, request.thread_id)
        end, position = request.base.version, request.start
        segments = SegmentCache()
        messages: list[Message] = []
        gaps: list[Gap] = []
        size, full = 0, False
        while position < end and not full:
            upto = min(end, position + STEP)
            try:  # what is gone comes back as placeholders, named in ``gaps``
                found, _ = await fetch_range(
                    client, holder, position, upto, page_bytes=PAGE_BYTES, segments=segments,
                    gaps=gaps,
                )  # fmt: skip
            except ThreadResolutionError as e:
                raise ApplicationError(str(e), type=type(e).__name__, non_retryable=True) from e
            for message in found:
                grown = size + approximate_size(message)
                full = bool(messages) and grown > request.max_bytes
                if full:
                    break  # the next chunk starts here
                messages.append(message)
                size, position = grown, position + 1
            activity.heartbeat(position)
        stop = request.start + len(messages)
        kept = [
            g.model_copy(update={"start": max(g.start, request.start), "end": min(g.end, stop)})
            for g in gaps
            if g.start < stop and g.end > request.start
        ]
        return AnchorChunk(
            anchor=request.anchor,
            start=request.start,
            messages=messages,
            gaps=_merged(kept),
            bytes=size,
        )

    @activity.defn(name=HORIZON_ACTIVITY)
    async def horizon(self) -> Horizon:
        """The worker's horizon, or ``HORIZON_SHARE`` of the namespace's retention (read
        from Temporal at most once a minute)."""
        if self._read is None or time.monotonic() - self._read[0] >= NAMESPACE_READ_EVERY:
            retention = await namespace_retention(activity.client())
            seconds = retention.total_seconds() if retention else 0.0
            read = Horizon(seconds=seconds * HORIZON_SHARE, retention_seconds=seconds or None)
            self._read = (time.monotonic(), read)
        read = self._read[1]
        if self._horizon is None:
            return read
        if read.retention_seconds and self._horizon.total_seconds() >= read.retention_seconds:
            activity.logger.warning(
                f"build_worker(horizon={self._horizon}) is not shorter than the namespace's "
                f"retention ({read.retention_seconds:g} s): sessions lose their closed runs "
                "before they copy them. Leave horizon unset (half the retention)."
            )
        return Horizon(
            seconds=self._horizon.total_seconds(), retention_seconds=read.retention_seconds
        )


def _merged(gaps: list[Gap]) -> list[Gap]:
    """Adjacent gaps of one run as one."""
    merged: list[Gap] = []
    for gap in sorted(gaps, key=lambda g: g.start):
        last = merged[-1] if merged else None
        if (
            last
            and last.end == gap.start
            and (last.workflow_id, last.run_id) == (gap.workflow_id, gap.run_id)
        ):
            merged[-1] = last.model_copy(update={"end": gap.end})
        else:
            merged.append(gap)
    return merged
