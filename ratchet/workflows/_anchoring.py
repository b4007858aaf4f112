"""Keeping a session's thread out of the reach of Temporal's retention.

A session's earlier messages are in the histories of its closed workflow runs,
and Temporal deletes a closed run once the namespace's retention has passed. So a
run that relies on closed runs copies what it still needs into its own history
before the oldest of them is ``horizon`` old (half the retention by default):
``ratchet.anchor`` activities read the log's start from wherever it is and return
it, in chunks, as their results; the run then names itself as the thread's base
(``ThreadBase.anchor``). An open run is never deleted, so from then on the session
relies on no closed run until it continues as new again.

An idle session wakes on one durable timer to do it; a busy one too (the copy runs
beside its messages). Messages already gone when it copies are copied as
placeholders and named (``ThreadData.gaps``): the session goes on with what
remains.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from ratchet.agents._messages import approximate_size
    from ratchet.agents._state import AgentState, ThreadBase
    from ratchet.wire._anchor_data import AnchorChunk, AnchorRequest, Horizon
    from ratchet.wire._names import ANCHOR_ACTIVITY, HORIZON_ACTIVITY
    from ratchet.wire._options import SessionOptions
    from ratchet.wire._session_data import SessionInput

REANCHOR = "ratchet-reanchor"
"""The patch (since 0.1.0) under which a session re-anchors its thread."""
ANCHOR_ASKED = "ratchet-reanchor-asked"
"""The patch under which a session re-anchors when asked (``ratchet sessions anchor``):
sessions started on 0.1.0 have no timer in their open run."""
MAX_COPY_BYTES = 24 * 1024 * 1024
"""The largest log a session copies into its history (Temporal ends a run at 50 MB
of history): beyond it the session needs payload storage to keep its earliest
messages past the retention."""
WARN_COPY_BYTES = MAX_COPY_BYTES // 2
"""From here on the session's status and the worker's log warn, early."""
ANCHOR_TIMEOUT = timedelta(minutes=2)
ANCHOR_RETRIES = RetryPolicy(maximum_interval=timedelta(minutes=1))
TOO_LARGE = (
    "This session's log is {size} MiB: copying it into history to keep it past the "
    "namespace's retention would near Temporal's 50 MB history limit, so {what}. Configure "
    "payload storage (payload_storage=, docs/sessions.md#retention) or raise the retention."
)


class Anchoring:
    """One session run's re-anchoring: when it is due, and the copy."""

    def __init__(
        self, state: Callable[[], AgentState], options: SessionOptions, input: SessionInput
    ) -> None:
        self._state = state
        self._option = options.horizon
        self.since: datetime | None = input.depends_since
        """When the oldest closed run this run relies on closed; ``None``: relies on
        none, or (with a base) unknown: a run continued from 0.1.0 copies at once."""
        self.copies = 0
        self.log_bytes = input.log_bytes
        """About the JSON size of the log before this run's own messages."""
        self.busy = False
        self.problem: str | None = None
        """Why the log is not (or soon not) kept past the retention: for the status."""
        self._keeper: asyncio.Task[None] | None = None

    @property
    def relies_on_others(self) -> bool:
        thread = self._state().session.thread
        return thread.kind == "messages" and thread.base is not None and thread.base.anchor is None

    def start(self) -> None:
        """Keep the thread anchored while this run is open (a run started by this
        code; one started by 0.1.0 does it when asked)."""
        if not self.relies_on_others or not workflow.patched(REANCHOR):
            return
        if self.since is None and not workflow.info().continued_run_id:
            self.since = workflow.now()  # a fork: its source may close from now on
        self._keeper = asyncio.create_task(self.keep())

    async def keep(self) -> None:
        """Re-anchor once the oldest closed run this run relies on is ``horizon`` old
        (re-reading the horizon each time the timer fires)."""
        while self.relies_on_others:
            horizon = await self.horizon()
            if horizon is None:
                return  # the namespace keeps closed runs for ever
            due = (self.since or workflow.now()) + horizon
            if workflow.now() < due:
                await workflow.sleep(due - workflow.now(), summary="re-anchor the thread")
                continue
            await self.reanchor()
            return

    async def asked(self) -> None:
        """``ratchet sessions anchor``: re-anchor now."""
        if workflow.patched(ANCHOR_ASKED):
            await self.reanchor()

    async def horizon(self) -> timedelta | None:
        if self._option is not None:
            return self._option
        read: Horizon = await workflow.execute_local_activity(
            HORIZON_ACTIVITY, result_type=Horizon, start_to_close_timeout=timedelta(seconds=30)
        )
        return timedelta(seconds=read.seconds) if read.seconds else None

    async def reanchor(self) -> None:
        """Copy the messages the thread's base names into this run's history, then
        name this run as the base. Whatever asked, one copy runs at a time."""
        if self.busy:
            await workflow.wait_condition(lambda: not self.busy)
            return
        base = self._state().session.thread.base
        if base is None or not self.relies_on_others:
            return
        if self.log_bytes > MAX_COPY_BYTES:
            self._warn(
                "it is not copied, and its earliest messages go with the runs that hold them"
            )
            return
        self.busy = True
        try:
            copied = await self._copy(base)
        finally:
            self.busy = False
        info = workflow.info()
        anchored = base.model_copy(
            update={
                "workflow_id": info.workflow_id,
                "run_id": info.run_id,
                "anchor": self.copies,
                "thread_id": None,
            }
        )
        state = self._state()
        thread = state.session.thread.model_copy(update={"base": anchored})
        state.session = state.session.model_copy(update={"thread": thread})
        self.since, self.log_bytes = None, copied
        if copied > WARN_COPY_BYTES:
            self._warn("the next copies will not fit")

    async def _copy(self, base: ThreadBase) -> int:
        """Every chunk of the copy, one activity each; the bytes copied."""
        self.copies += 1
        thread_id, start, copied = self._state().session.thread.id, 0, 0
        while start < base.version:
            request = AnchorRequest(base=base, thread_id=thread_id, anchor=self.copies, start=start)
            chunk: AnchorChunk = await workflow.execute_activity(
                ANCHOR_ACTIVITY,
                request,
                result_type=AnchorChunk,
                start_to_close_timeout=ANCHOR_TIMEOUT,
                heartbeat_timeout=ANCHOR_TIMEOUT,
                retry_policy=ANCHOR_RETRIES,
                summary=f"re-anchor: messages from {start}",
            )
            if chunk.end <= start:
                raise RuntimeError(f"re-anchoring copied nothing from position {start}")
            start, copied = chunk.end, copied + chunk.bytes
        return copied

    def carried_since(self) -> datetime:
        """For the run this one continues as new into: it relies on this run (closing
        now) and on what this run relies on."""
        return (self.since if self.relies_on_others and self.since else None) or workflow.now()

    def carried_bytes(self) -> int:
        own = sum(approximate_size(m) for m in self._state().session.thread.messages)
        return self.log_bytes + own

    def _warn(self, what: str) -> None:
        size = round(self.log_bytes / 1024 / 1024, 1)
        self.problem = TOO_LARGE.format(size=size, what=what)
        workflow.logger.warning(self.problem)
