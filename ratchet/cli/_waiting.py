"""What a command says while a run or session waits: for a worker to take its task
(``run``, ``chat``, ``watch``, decisions), for a person's decision (``run``), and
what goes on when the command is interrupted.

A workflow waits for a worker when its workflow task stays *scheduled* (not
started): judged from the workflow itself, not from the task queue's pollers,
whose last access time stays fresh for minutes after a worker stopped and can be a
minute old for a live, idle one. The note names them all the same.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TextIO, TypeVar

if TYPE_CHECKING:
    from temporalio.client import Client

    from ratchet.client import RunHandle
    from ratchet.types import PendingView

T = TypeVar("T")

NO_WORKER_AFTER = 5.0
"""Seconds a workflow task may wait for a worker before the command says so."""
SAMPLE_EVERY = 1.0
WAITING_STATUSES = ("AWAITING_APPROVAL", "AWAITING_INPUT")


async def warn_without_worker(
    temporal: Client, workflow_id: str, what: str, say: Callable[[str], None] | None = None
) -> None:
    """Until cancelled or the workflow closes: each time a task of ``workflow_id``
    has waited ``NO_WORKER_AFTER`` seconds without a worker taking it, say so once
    (``what`` names the workflow: "run X", "session X"; ``say``: to stderr)."""
    from temporalio.api.enums.v1 import PendingWorkflowTaskState
    from temporalio.client import WorkflowExecutionStatus

    scheduled = PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED
    handle = temporal.get_workflow_handle(workflow_id)
    waiting_since: float | None = None
    said = False
    while True:
        description = await handle.describe()
        if description.status != WorkflowExecutionStatus.RUNNING:
            return
        raw = description.raw_description
        waits = raw.HasField("pending_workflow_task") and (
            raw.pending_workflow_task.state == scheduled
        )
        now = time.monotonic()
        if not waits:
            waiting_since, said = None, False
        elif waiting_since is None:
            waiting_since = now
        elif not said and now - waiting_since >= NO_WORKER_AFTER:
            (say or _to_stderr)(await stall_note(temporal, description.task_queue, what))
            said = True
        await asyncio.sleep(SAMPLE_EVERY)


async def answered(
    call: Callable[[], Awaitable[T]], temporal: Client, workflow_id: str, what: str
) -> T:
    """``call()``'s answer (a query, which a worker answers); while no worker does,
    say so once and ask again."""
    said = False
    while True:
        try:
            return await asyncio.wait_for(call(), NO_WORKER_AFTER)
        except Exception as e:
            if not no_worker_answered(e):
                raise
        if not said:
            description = await temporal.get_workflow_handle(workflow_id).describe()
            _to_stderr(await stall_note(temporal, description.task_queue, what))
            said = True
        await asyncio.sleep(SAMPLE_EVERY)


def no_worker_answered(error: BaseException) -> bool:
    """A query no worker answered: none polls (the server says so at once), or none
    took it in time."""
    from temporalio.client import RPCTimeoutOrCancelledError
    from temporalio.service import RPCError, RPCStatusCode

    if isinstance(error, TimeoutError | RPCTimeoutOrCancelledError):
        return True
    return isinstance(error, RPCError) and (
        error.status == RPCStatusCode.DEADLINE_EXCEEDED or "no poller seen" in error.message
    )


async def stall_note(temporal: Client, task_queue: str, what: str) -> str:
    pollers = await poller_note(temporal, task_queue)
    return (
        f"note: no worker has taken {what}'s task in {NO_WORKER_AFTER:g} s (task queue "
        f"{task_queue!r}: {pollers}). It waits until a worker does; start one: ratchet "
        f"worker --agents myapp.agents:AGENTS --task-queue {task_queue}"
    )


def _to_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


async def poller_note(temporal: Client, task_queue: str) -> str:
    """Who polled ``task_queue`` for workflow tasks lately, and when."""
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    answer = await temporal.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=temporal.namespace,
            task_queue=TaskQueue(name=task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        )
    )
    if not answer.pollers:
        return "no worker has polled it lately"
    now = datetime.now(UTC)
    seen = sorted(answer.pollers, key=lambda p: p.last_access_time.ToDatetime(), reverse=True)
    parts = []
    for poller in seen[:3]:
        at = poller.last_access_time.ToDatetime(tzinfo=UTC)
        ago = max(0, round((now - at).total_seconds()))
        parts.append(f"{poller.identity} at {at:%H:%M:%S} UTC, {ago} s ago")
    return "last polled by " + "; ".join(parts)


@contextlib.asynccontextmanager
async def watching(*tasks: asyncio.Task[None]) -> AsyncIterator[None]:
    """Runs ``tasks`` alongside the body; cancels them when it ends. A task that
    fails only stops saying what it would have said."""
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def connection_flags(args: argparse.Namespace) -> str:
    """The connection options the user gave, for a command line we print."""
    flags = ""
    for name in ("address", "namespace"):
        if value := getattr(args, name, None):
            flags += f" --{name} {value}"
    return flags


def decision_commands(workflow_id: str, item: PendingView, flags: str = "") -> list[str]:
    """What waits, and the commands that decide it."""
    action = item.action
    where = f"{workflow_id} {action.id}{flags}"
    if action.kind == "input":
        return [
            f"waiting for an answer: {action.question} (question {action.id})",
            f'  answer: ratchet sessions answer {workflow_id} {action.id} "..."{flags}',
        ]
    assert action.call is not None
    return [
        f"waiting for {action.kind}: {action.call.describe(limit=2000)} (call {action.id})",
        f"  approve: ratchet sessions approve {where}",
        f"  reject:  ratchet sessions reject {where} --reason ...",
    ]


async def announce_decisions(run: RunHandle, flags: str, out: TextIO) -> None:
    """Each time the run waits for a person, print what for and how to decide it."""
    told: set[str] = set()
    async for event in run.events(strict=False):
        if event.kind != "status" or event.text not in WAITING_STATUSES:
            continue
        for item in await run.pending():
            if item.action.id not in told:
                told.add(item.action.id)
                for line in decision_commands(run.id, item, flags):
                    print(line, file=out, flush=True)


def interrupted(what: str, lines: list[str]) -> None:
    """After Ctrl-C: the run or session goes on without this command; say how to
    follow it."""
    print(f"\ninterrupted: {what} goes on without this command.", file=sys.stderr)
    for line in lines:
        print(f"  {line}", file=sys.stderr)
    sys.stderr.flush()
