"""Knowing when a workflow's event stream may have grown, without polling it.

The stream lives in workflow state, so it changes only when a workflow task
completes. ``HistoryWatch`` follows the workflow's history with the server's own
long poll (``GetWorkflowExecutionHistory`` with ``wait_new_event``, the call
``handle.result()`` waits with): the frontend holds it until the history grows,
so an idle session costs nothing, and a reader queries the stream once per
completed workflow task instead of on a timer. The watch follows the workflow
across continue-as-new and notes when it has closed.

A new run answers no query before its first workflow task has completed (the
server holds the query until then), and the server delays that task when the
run before lived less than a second (``ContinueAsNewMinInterval``). So after a
continue-as-new the watch is not ``ready`` until the new run's first task has
completed, and if that task is delayed it names the run that just closed
(``tail``, until the new run is ready): readers read the closed run's last events
from it meanwhile. One watch serves every reader of the workflow in a process
(``ratchet.client._shared_poll``): each waits for a change after the ``version``
it last read at.

Each watch holds one long poll open against the frontend, and the frontend
admits ``frontend.namespaceCount`` (dynamic config, 1,200 by default) concurrent
``GetWorkflowExecutionHistory`` calls per namespace per instance; so a process
follows at most ``LIMIT`` histories at once. Beyond that, or if the history
cannot be followed (the call is refused, say), ``following`` is false and
readers poll on a timer instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryRequest
from temporalio.client import Client

LIMIT = 1_000
"""Histories one process follows at once (the rest are polled)."""
LONG_POLL = timedelta(seconds=70)
"""Per call; the server answers a long poll with nothing after about 20 s."""
CLOSES = frozenset({
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
})  # fmt: skip
READY = CLOSES | {EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED}
"""Changes to the workflow's state; a run answers queries at once from its first
completed workflow task on (a closed one by replay)."""
STARTED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED

log = logging.getLogger(__name__)


class HistoryWatch:
    """Counts a new ``version`` whenever there may be something new to read: a
    workflow task completed (after a continue-as-new, the new run's first), the
    workflow closed (then ``closed`` is true too), or a new run's first task is
    delayed (then ``tail`` names the run it continued, until the new run is
    ``ready``: it answers a query at once). ``wait(version)`` waits for a change
    after ``version``. ``close()`` stops following."""

    active = 0
    """Watches following a history in this process."""

    def __init__(self, client: Client, workflow_id: str) -> None:
        self.version = 0
        self._next = asyncio.Event()
        self.closed = False
        self.ready = True
        self.tail: str | None = None
        self.following = HistoryWatch.active < LIMIT
        self._client, self._id = client, workflow_id
        self._task: asyncio.Task[None] | None = None
        if self.following:
            HistoryWatch.active += 1
            self._task = asyncio.create_task(self._follow(), name=f"ratchet-history:{workflow_id}")
            self._task.add_done_callback(_stopped)

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def wait(self, version: int, seconds: float) -> bool:
        """Waits for a change after ``version``, at most ``seconds``; whether one came."""
        if self.version <= version:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._next.wait(), seconds)
        return self.version > version

    def _changed(self) -> None:
        self.version += 1
        self._next.set()
        self._next = asyncio.Event()

    async def _follow(self) -> None:
        run_id, token = "", b""  # "": the latest run, pinned by the first page's token
        try:
            while True:
                response = await self._client.workflow_service.get_workflow_execution_history(
                    GetWorkflowExecutionHistoryRequest(
                        namespace=self._client.namespace,
                        execution=WorkflowExecution(workflow_id=self._id, run_id=run_id),
                        next_page_token=token,
                        wait_new_event=True,
                        skip_archival=True,
                    ),
                    retry=True,
                    timeout=LONG_POLL,
                )
                events = response.history.events
                kinds = {event.event_type for event in events}
                if EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW in kinds:
                    # Nothing to read until the new run answers, or names this one.
                    self.ready = False
                    run_id, token = "", b""  # on to the new run, from its start
                    continue
                if kinds & READY:
                    self.ready, self.tail = True, None
                    self._changed()
                elif events and events[0].event_type == STARTED and not self.ready:
                    self._waiting(events[0])
                if kinds & CLOSES:
                    self.closed = True
                    return
                elif response.next_page_token:
                    token = response.next_page_token
                else:  # the run is over, but its history did not say how
                    raise RuntimeError("history ended without a close event")
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - readers go back to polling
            log.warning("not following %s's history (%s); polling it instead", self._id, e)
            self.following = False
            self._changed()

    def _waiting(self, started: HistoryEvent) -> None:
        """A new run whose first workflow task is delayed: its reader reads the
        run it continued meanwhile."""
        attributes = started.workflow_execution_started_event_attributes
        delayed = attributes.first_workflow_task_backoff.ToTimedelta() > timedelta(0)
        if delayed and attributes.continued_execution_run_id:
            self.tail = attributes.continued_execution_run_id
            self._changed()


def _stopped(_: asyncio.Task[None]) -> None:
    HistoryWatch.active -= 1
