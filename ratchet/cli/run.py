"""``ratchet run``: run an agent on a prompt and print its answer."""

from __future__ import annotations

import argparse
import asyncio
import sys

NO_WORKER_AFTER = 5.0
"""Seconds without a worker polling the task queue before ``run`` says so."""


def register(commands: argparse._SubParsersAction) -> None:
    from .common import add_connection_arguments

    run = commands.add_parser("run", help="run an agent on a prompt and print its answer")
    run.add_argument("agent")
    run.add_argument("prompt")
    add_connection_arguments(run)
    run.add_argument("--max-turns", type=int, default=25)
    run.add_argument(
        "--ui-url",
        help="Temporal Web UI base URL for the run's link (default: RATCHET_UI_URL, or "
        "http://localhost:8233 for a local server on :7233)",
    )
    run.set_defaults(func=run_once)


async def run_once(args: argparse.Namespace) -> int:
    from ratchet.errors import RunFailedError
    from ratchet.wire.options import RunOptions

    from .common import connect, default_ui_url

    client = await connect(args, ui_url=args.ui_url or default_ui_url(args.address))
    handle = await client.start_run(
        args.agent, args.prompt, options=RunOptions(max_turns=args.max_turns)
    )
    print(f"workflow: {handle.id}", flush=True)
    if handle.ui_url:
        print(f"ui: {handle.ui_url}", flush=True)
    watchdog = asyncio.create_task(warn_without_worker(client.temporal, args.task_queue))
    try:
        result = await handle.result()
    except RunFailedError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        watchdog.cancel()
    print(f"turns: {result.turns} · tokens: {result.usage.total_tokens}")
    print(f"\n{result.output}")
    return 0


async def warn_without_worker(temporal: object, task_queue: str) -> None:
    """After NO_WORKER_AFTER seconds, say so if no worker polls ``task_queue``
    (the run waits for one; it does not fail)."""
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
    from temporalio.client import Client

    assert isinstance(temporal, Client)
    await asyncio.sleep(NO_WORKER_AFTER)
    answer = await temporal.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=temporal.namespace,
            task_queue=TaskQueue(name=task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        )
    )
    if not answer.pollers:
        print(
            f"note: no worker polls task queue {task_queue!r}; the run waits until one "
            f"does. Start one: ratchet worker --agents myapp.agents:AGENTS "
            f"--task-queue {task_queue}",
            file=sys.stderr,
            flush=True,
        )
