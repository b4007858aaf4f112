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
from datetime import UTC, datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from ratchet.types import AgentRecord, ThreadBase, approximate_size
    from ratchet.wire import (
        ANCHOR_ACTIVITY,
        HORIZON_ACTIVITY,
        AnchorChunk,
        Anchored,
        AnchorRequest,
        Horizon,
    )

    from ._patches import ANCHOR_ASKED, patched

MAX_COPY_BYTES = 24 * 1024 * 1024
"""The largest log a session copies into its history (Temporal ends a run at 50 MB
of history): beyond it the session needs payload storage to keep its earliest
messages past the retention."""
WARN_COPY_BYTES = MAX_COPY_BYTES // 2
"""From here on the session's status and the worker's log warn, early."""
UNKNOWN_AGE = datetime(1970, 1, 1, tzinfo=UTC)
"""``depends_since`` for runs whose age is not known: due at once."""
ANCHOR_TIMEOUT = timedelta(minutes=2)
ANCHOR_RETRIES = RetryPolicy(maximum_interval=timedelta(minutes=1))
TOO_LARGE = (
    "This session's log is {size} MiB: copying it into history to keep it past the "
    "namespace's retention would near Temporal's 50 MB history limit, so {what}. Configure "
    "payload storage (payload_storage=, docs/sessions.md#retention) or raise the retention."
)


class Anchoring:
    """One workflow run's re-anchoring (a session's, or a single run's that continued
    as new): when it is due, and the copy."""

    def __init__(
        self,
        state: Callable[[], AgentRecord],
        horizon: timedelta | None,
        since: datetime | None,
        log_bytes: int,
    ) -> None:
        """``horizon``: the session's own (``None``: the worker's); ``since`` and
        ``log_bytes``: as the run before carried them (``depends_since``)."""
        self._state = state
        self._option = horizon
        self.since = since
        """When the oldest closed run this run relies on closed (a fork: when it was
        made); ``None``: relies on none, or a run 0.1.0 continued (no timer)."""
        self.copies = 0
        self.log_bytes = log_bytes
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
        """Keep the thread anchored while this run is open. Decided by the run's input
        alone, never by ``workflow.patched`` at the run's start: a worker that takes
        a continued run's first two workflow tasks at once (the first was done with
        no command elsewhere) would record a marker that a replay, taking them one by
        one, does not expect. Runs of 0.1.0 (no ``depends_since``) do it when asked."""
        if self.relies_on_others and self.since is not None:
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

    async def asked(self) -> Anchored:
        """``ratchet sessions anchor``: re-anchor now."""
        if not patched(ANCHOR_ASKED):
            return Anchored()
        return await self.reanchor()

    async def horizon(self) -> timedelta | None:
        if self._option is not None:
            return self._option
        read: Horizon = await workflow.execute_local_activity(
            HORIZON_ACTIVITY, result_type=Horizon, start_to_close_timeout=timedelta(seconds=30)
        )
        return timedelta(seconds=read.seconds) if read.seconds else None

    async def reanchor(self) -> Anchored:
        """Copy the messages the thread's base names into this run's history, then
        name this run as the base. Whatever asked, one copy runs at a time."""
        if self.busy:
            await workflow.wait_condition(lambda: not self.busy)
            return Anchored()
        base = self._state().session.thread.base
        if base is None or not self.relies_on_others:
            return Anchored()
        if self.log_bytes > MAX_COPY_BYTES:
            self._warn("it is not copied: its earliest messages go with the runs that hold them")
            return Anchored(warning=self.problem)
        self.busy = True
        try:
            copied = await self._copy(base)
        except ActivityError as e:
            self.problem = f"Re-anchoring the thread failed: {e.cause or e}"
            workflow.logger.warning(self.problem)
            return Anchored(warning=self.problem)
        finally:
            self.busy = False
        info = workflow.info()
        update = {"workflow_id": info.workflow_id, "run_id": info.run_id, "anchor": self.copies}
        anchored = base.model_copy(update={**update, "thread_id": None})
        state = self._state()
        thread = state.session.thread.model_copy(update={"base": anchored})
        state.session = state.session.model_copy(update={"thread": thread})
        self.since, self.log_bytes = None, copied.bytes
        if copied.bytes > WARN_COPY_BYTES:
            self._warn("the next copies will not fit")
        return copied.model_copy(update={"warning": self.problem})

    async def _copy(self, base: ThreadBase) -> Anchored:
        """Every chunk of the copy, one activity each."""
        self.copies += 1
        thread_id, start = self._state().session.thread.id, 0
        copied = Anchored()
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
            start = max(chunk.end, start + 1)  # a chunk holds one message at least
            copied.messages += len(chunk.messages)
            copied.bytes += chunk.bytes
            copied.gaps += chunk.gaps
        return copied

    def carried_since(self) -> datetime:
        """For the run this one continues as new into: it relies on this run (closing
        now) and on what this run relies on. A run 0.1.0 continued relies on runs of
        unknown age: the next run copies at once."""
        if not self.relies_on_others:
            return workflow.now()
        return self.since or UNKNOWN_AGE

    def carried_bytes(self) -> int:
        own = sum(approximate_size(m) for m in self._state().session.thread.messages)
        return self.log_bytes + own

    def _warn(self, what: str) -> None:
        size = round(self.log_bytes / 1024 / 1024, 1)
        self.problem = TOO_LARGE.format(size=size, what=what)
        workflow.logger.warning(self.problem)
