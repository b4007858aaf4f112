"""A run's or session's thread, read from outside, whole or a part at a time.

Where the log is: while the workflow runs, its ``log_info`` query says; once it
has closed, a session's last run is read from its history (a query to a closed
run costs a worker a replay of it). Its messages are paged in from the workflow
runs that hold them (``fetch_range``: a session's closed runs from their
histories, the others by ``ratchet.thread`` queries), following each run back to
the one before.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus

from ratchet.errors import InvalidInputError
from ratchet.history import Holder, SegmentCache, closed_segment, fetch_range
from ratchet.types import Gap, Message, ThreadBase, ThreadData
from ratchet.wire import PAGE_BYTES, SESSION_WORKFLOW, LogInfo


async def log_info(handle: Any) -> LogInfo:
    """Where the thread of the workflow behind ``handle`` is (no messages)."""
    return await handle.query("log_info", result_type=LogInfo)


async def read_messages(
    client: Client, workflow_id: str, thread_id: str, start: int, end: int
) -> list[Message]:
    """Messages ``start`` to ``end`` of a log, from the workflow's runs that hold them."""
    holder = Holder(workflow_id, None, thread_id)
    messages, _ = await fetch_range(client, holder, start, end, page_bytes=PAGE_BYTES)
    return messages


async def read_thread(
    client: Client,
    handle: Any,
    *,
    after: int | None = None,
    last: int | None = None,
    limit: int | None = None,
    segments: SegmentCache | None = None,
) -> ThreadData:
    """The thread (any length): every message it has had, in order; ``view`` says
    which of them its turns send now. Or the part ``after``, ``last`` and ``limit``
    name (see ``SessionHandle.thread``), read alone."""
    check_part(after, last, limit)
    log = await _where(client, handle, segments)
    info = log.info
    start, end = _part(info.length, after, last, limit)
    gaps: list[Gap] = []
    messages, before_id = await log.read(client, start, end, segments, gaps)
    base = ThreadBase(workflow_id=handle.id, version=start, last_id=before_id) if start else None
    return ThreadData(
        id=info.thread_id,
        kind=info.kind,
        cursor=info.cursor,
        messages=messages,
        view=info.view,
        base=base,
        gaps=gaps,
    )


async def iter_messages(
    client: Client,
    handle: Any,
    *,
    after: int = 0,
    page: int = 500,
    segments: SegmentCache | None = None,
) -> AsyncIterator[Message]:
    """The thread's messages from position ``after`` on, as far as the thread
    reached when the iteration began, read ``page`` messages at a time."""
    check_part(after, None, None)
    if page < 1:
        raise InvalidInputError(f"page must be 1 or more; got {page}.")
    log = await _where(client, handle, segments)
    length = log.info.length
    position, _ = _part(length, after, None, None)
    while position < length:
        end = min(length, position + page)
        messages, _ = await log.read(client, position, end, segments, [])
        for message in messages:
            yield message
        position = end


def check_part(after: int | None, last: int | None, limit: int | None) -> None:
    """Raise ``InvalidInputError`` for a part of a thread that names nothing."""
    for name, value in (("after", after), ("last", last), ("limit", limit)):
        if value is not None and value < 0:
            raise InvalidInputError(f"{name} must be 0 or more; got {value}.")
    if after is not None and last is not None:
        raise InvalidInputError(
            "Pass after (the messages after the first n) or last (the latest n), not both."
        )


@dataclass(frozen=True)
class _Log:
    """Where a workflow's log is, and the workflow run to read it from."""

    info: LogInfo
    workflow_id: str
    run_id: str | None
    """A closed session's last run, read from its history; ``None``: the latest
    run, which answers queries and names the runs before it."""

    async def read(
        self,
        client: Client,
        start: int,
        end: int,
        segments: SegmentCache | None,
        gaps: list[Gap] | None = None,
    ) -> tuple[list[Message], str | None]:
        """Messages ``start`` to ``end``, and the id of message ``start - 1``. Those
        all before the latest run's own are read from the runs before it, without
        asking it again (a query waits on a worker: the slowest step of a page)."""
        holder = Holder(self.workflow_id, self.run_id, self.info.thread_id)
        base = self.info.base
        if self.run_id is None and base is not None and end <= base.version:
            holder = Holder.of_base(base, self.info.thread_id)
        return await fetch_range(
            client, holder, start, end, page_bytes=PAGE_BYTES, segments=segments, gaps=gaps
        )


async def _where(client: Client, handle: Any, segments: SegmentCache | None) -> _Log:
    """Where the log is: while the workflow runs, its ``log_info`` query says; a
    closed session's last run is read from its history instead of being replayed
    to answer queries."""
    described = await handle.describe()
    closed = described.status != WorkflowExecutionStatus.RUNNING and described.run_id
    if closed and described.workflow_type == SESSION_WORKFLOW:
        segment = await closed_segment(client, handle.id, described.run_id, segments)
        if segment is not None:
            return _Log(segment.info, handle.id, described.run_id)
    # Running, or closed without an index (terminated): by query.
    return _Log(await log_info(handle), handle.id, None)


def _part(length: int, after: int | None, last: int | None, limit: int | None) -> tuple[int, int]:
    """Positions ``start`` to ``end`` of a thread of ``length`` messages that
    ``after``, ``last`` and ``limit`` name."""
    start = max(0, length - last) if last is not None else min(after or 0, length)
    end = length if limit is None else min(length, start + limit)
    return start, end
