"""``ratchet demo``: a durable agent run that survives a killed worker.

Starts the embedded dev server and a worker process, runs the travel agent, kills
the worker with SIGKILL in the middle of a turn, starts a new one, and shows the
run resuming from its last completed turn.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from datetime import timedelta
from pathlib import Path

from temporalio.api.enums.v1 import EventType

from ratchet.client import AgentClient, RunHandle
from ratchet.devserver import DevServer
from ratchet.examples import DEMO_PROMPT
from ratchet.testing import WorkerProcess
from ratchet.types import Message
from ratchet.wire import RunOptions, TurnOutput

TASK_QUEUE = "ratchet-demo"


def worker_process(name: str, server: DevServer) -> WorkerProcess:
    """A ``ratchet worker`` child process that prints the tool calls it runs."""

    def on_line(line: str) -> None:
        if "tool " in line:
            print(f"      {name}: {line.split('] ', 1)[-1]}")

    return WorkerProcess(server, TASK_QUEUE, "ratchet.examples:AGENTS", on_line=on_line)


async def started(worker: WorkerProcess, name: str) -> bool:
    """Wait for the worker's ready line; say why it never came (its own output)."""
    try:
        await asyncio.to_thread(worker.wait_ready)
    except AssertionError:
        print(f"error: {name} did not start:\n{worker.output}", file=sys.stderr)
        return False
    return True


def tool_calls(worker: WorkerProcess) -> list[str]:
    return [line.split("tool ", 1)[1].rstrip("\n") for line in worker.lines if "tool " in line]


async def follow_turns(client: AgentClient, handle: RunHandle) -> None:
    """Print each turn when its checkpoint (ActivityTaskCompleted) reaches history."""
    started: dict[int, tuple[int, str]] = {}
    turn = 0
    async for event in handle.workflow.fetch_history_events(wait_new_event=True):
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            attrs = event.activity_task_started_event_attributes
            started[attrs.scheduled_event_id] = (attrs.attempt, attrs.identity)
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            attrs = event.activity_task_completed_event_attributes
            (output,) = await client.temporal.data_converter.decode(
                attrs.result.payloads, [TurnOutput]
            )
            turn += 1
            attempt, identity = started.get(attrs.scheduled_event_id, (1, "?"))
            retried = f" (attempt {attempt}, {identity})" if attempt > 1 else ""
            print(f"  ✓ turn {turn} checkpointed{retried}: {describe(output)}")
        elif event.event_type in (
            EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
            EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
        ):
            return


def describe(output: TurnOutput) -> str:
    messages = [m for m in output.added if isinstance(m, Message)]
    calls = {c.id: c.describe(50) for m in messages for c in m.tool_calls}
    results = [
        f"{calls.get(m.tool_call_id or '', m.name)} → {_short(m.text)}"
        for m in messages
        if m.role == "tool"
    ]
    if results:
        return "; ".join(results)
    final = next((m for m in messages if m.id == output.final_id), None)
    return f"final answer ({len(final.text) if final else 0} chars)"


def _short(text: str, limit: int = 48) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def run_demo(keep: bool, state_dir: Path) -> int:
    offline = not os.environ.get("OPENAI_API_KEY")
    print("Ratchet demo: a durable agent run survives a killed worker.")
    model = "ScriptedModel (offline; set OPENAI_API_KEY for a real model)" if offline else "OpenAI"
    print(f"  model: {model}")
    server = DevServer.start(log_dir=state_dir)
    workers: list[WorkerProcess] = []
    try:
        print(f"  Temporal dev server on {server.address}, Web UI at {server.ui_url}")
        loop = asyncio.get_running_loop()
        client = await AgentClient.connect(
            server.address, task_queue=TASK_QUEUE, ui_url=server.ui_url
        )
        first = worker_process("worker A", server)
        workers.append(first)
        if not await started(first, "worker A"):
            return 1
        print(f"  worker A started (pid {first.process.pid})")
        beat = timedelta(seconds=2)
        options = RunOptions(heartbeat_timeout=beat, max_turns=12)
        handle = await client.start_run("travel", DEMO_PROMPT, options=options)
        print(f"\nRun {handle.id}\n  user: {DEMO_PROMPT}")
        follower = asyncio.create_task(follow_turns(client, handle))
        # Kill worker A while it runs its second tool call: mid-turn, after a checkpoint.
        await asyncio.to_thread(first.wait_for, ") started", 2, 300)
        first.kill()
        print(f"  ✗ worker A killed with SIGKILL in the middle of a turn (pid {first.process.pid})")
        second = worker_process("worker B", server)
        workers.append(second)
        if not await started(second, "worker B"):
            return 1
        print(
            f"  worker B started (pid {second.process.pid}); the interrupted turn is retried "
            f"once worker A misses its {beat.total_seconds():.0f}s heartbeat"
        )
        result = await handle.result()
        await follower
        rerun = [c for c in tool_calls(second) if c in tool_calls(first)[:-1]]
        print(f"\nAnswer: {result.output}")
        print(
            f"\n{result.turns} turns, {result.usage.total_tokens} tokens. Tool calls finished "
            f"before the kill and run again by worker B: {len(rerun)}."
        )
        if not keep:  # a link to a server that is about to stop would lead nowhere
            print("The dev server stops now; `ratchet demo --keep` keeps it and its Web UI up.")
        else:
            print(f"Open the run in the Temporal UI: {handle.ui_url}")
            print("\n--keep: server and UI stay up; press Ctrl-C to stop.")
            stop = asyncio.Event()
            loop.add_signal_handler(signal.SIGINT, stop.set)
            loop.add_signal_handler(signal.SIGTERM, stop.set)
            await stop.wait()
        return 0 if not rerun else 1
    finally:
        for worker in workers:
            worker.stop()
        server.stop()
