"""RunHandle: a single run seen from outside (client side). What it shares with a
session's handle is in ``AgentHandle``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

from ratchet._temporal_internals import handle_client
from ratchet.types import Message, PendingView, RunEvent, StateChanged, ThreadData
from ratchet.wire import RunResult, StopRequest
from ratchet.workflows import AgentRun

from ._error_mapping import GuardedHandle, already_ended, failed_run
from ._event_reader import run_events, start_offset
from ._handle import AgentHandle
from ._thread_reader import iter_messages, read_thread


class RunHandle(AgentHandle):
    """A started run."""

    noun = "run"

    def __init__(
        self, handle: WorkflowHandle[Any, RunResult], ui_url: str | None, namespace: str
    ) -> None:
        self._handle = GuardedHandle(handle, "run")
        self._ui_url = ui_url
        self._namespace = namespace

    @property
    def temporal_run_id(self) -> str | None:
        """Temporal's id of the workflow run this handle started (``id`` is the
        workflow id, which Ratchet calls a run's id everywhere)."""
        return self._handle.result_run_id or self._handle.run_id

    def events(
        self, *, after: int | None = None, from_offset: int = 0, strict: bool = True
    ) -> AsyncIterator[RunEvent]:
        """The run's live events in order (status, turns, streamed text, tool calls,
        ``context.emit``), ending when the run ends. A retried turn's events come
        after a ``retry`` event: drop the text and custom events the failed attempt
        showed. Raises ``EventsExpiredError`` at an event the run no longer holds
        (``strict=False``: skips ahead), never skipping silently.

        Each event carries its ``offset``; a watcher that stopped resumes with
        ``events(after=offset)`` (the last one it handled), and gets each event after
        it once."""
        client = handle_client(self.workflow)
        start = start_offset(after, from_offset)
        return run_events(client, self.id, from_offset=start, strict=strict)

    @property
    def ui_url(self) -> str | None:
        if not self._ui_url:
            return None
        ns = self._namespace
        tail = f"/{self.temporal_run_id}" if self.temporal_run_id else ""
        return f"{self._ui_url.rstrip('/')}/namespaces/{ns}/workflows/{self.id}{tail}/history"

    async def result(self) -> RunResult:
        """Wait for the run; raise :class:`RunFailedError` with the cause if it failed."""
        try:
            return await self._handle.result()
        except WorkflowFailureError as e:
            raise failed_run(self.id, e) from e

    async def thread(
        self, *, after: int | None = None, last: int | None = None, limit: int | None = None
    ) -> ThreadData:
        """The whole thread, paged in (any length, across continue-as-new): every
        message the run has had, in order; ``view`` says which of them its turns send
        now (``state()`` holds only the latest workflow run's messages). Or a part of
        it, read alone, as ``SessionHandle.thread`` names it."""
        return await read_thread(
            handle_client(self.workflow), self._handle, after=after, last=last, limit=limit
        )

    def messages(self, *, after: int = 0, page: int = 500) -> AsyncIterator[Message]:
        """The thread's messages from position ``after`` on, as far as the thread
        reached when the iteration began, read ``page`` messages at a time."""
        return iter_messages(handle_client(self.workflow), self._handle, after=after, page=page)

    async def state_changes(self) -> list[StateChanged]:
        """The latest committed state changes (an ``AgentRun`` keeps 100)."""
        return await self._handle.query(AgentRun.state_changes)

    async def stop(self, reason: str = "stopped") -> None:
        """Stop the run at its next safe point, keeping the turns it finished: it
        ends with status CANCELLED (``result()`` returns them). A run that has ended
        already is left as it ended."""
        try:
            await self._handle.signal(AgentRun.stop, StopRequest(reason=reason))
        except RPCError as e:
            if not already_ended(e):
                raise

    async def cancel(self) -> None:
        """Cancel the run's workflow through Temporal (what an operator's cancel in
        the Temporal UI does): the turn in flight sees it at its next heartbeat and
        the workflow ends CANCELLED, without a result. ``stop()`` ends it with one.
        A run that has ended already is left as it ended."""
        await self._handle.cancel()

    async def wait_for_pending(self) -> list[PendingView]:
        """Wait until the run waits for someone and list what for; ``[]`` if it ends first."""
        while True:
            try:
                found = await self._handle.execute_update(AgentRun.wait_pending)
            except RPCError as e:
                if e.status != RPCStatusCode.NOT_FOUND:
                    raise
                return []  # the run has ended
            if found:
                return found
            description = await self._handle.describe()
            if description.status is None or description.status.name != "RUNNING":
                return []
            # Continued as new: ask the new workflow run.
