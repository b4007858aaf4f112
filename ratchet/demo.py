"""``ratchet demo``: a durable agent run that survives a killed worker.

Starts the embedded dev server and a worker process, runs the travel agent, kills
the worker with SIGKILL in the middle of a turn, starts a new one, and shows the
run resuming from its last completed turn.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

from temporalio.api.enums.v1 import EventType

from ratchet.agents.messages import Message
from ratchet.client import AgentClient
from ratchet.client.client import RunHandle
from ratchet.devserver import DevServer, env_with_address
from ratchet.examples import DEMO_PROMPT
from ratchet.wire.options import RunOptions
from ratchet.wire.turns import TurnOutput

TASK_QUEUE = "ratchet-demo"


class WorkerProcess:
    """A ``ratchet worker`` child process; its output lines are printed as they come."""

    def __init__(self, name: str, server: DevServer, loop: asyncio.AbstractEventLoop) -> None:
        self.name = name
        self.lines: list[str] = []
        self.tool_calls: list[str] = []
        self._changed = asyncio.Event()
        self._loop = loop
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ratchet.worker",
                "--agents",
                "ratchet.examples:AGENTS",
                "--task-queue",
                TASK_QUEUE,
            ],
            env=env_with_address(server),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._loop.call_soon_threadsafe(self._on_line, line.rstrip("\n"))
        self._loop.call_soon_threadsafe(self._changed.set)

    def _on_line(self, line: str) -> None:
        self.lines.append(line)
        if "tool " in line:
            self.tool_calls.append(line.split("tool ", 1)[1])
            print(f"      {self.name}: {line.split('] ', 1)[-1]}")
        self._changed.set()

    async def wait_for(self, text: str, count: int = 1) -> None:
        """Wait until ``count`` output lines contain ``text``."""
        while sum(text in line for line in self.lines) < count:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited with code {self.process.returncode}:\n"
                    + "\n".join(self.lines[-20:])
                )
            self._changed.clear()
            await self._changed.wait()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


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
        first = WorkerProcess("worker A", server, loop)
        workers.append(first)
        await first.wait_for("worker ready")
        print(f"  worker A started (pid {first.process.pid})")
        options = RunOptions(heartbeat_timeout=timedelta(seconds=2), max_turns=12)
        handle = await client.start_run("travel", DEMO_PROMPT, options=options)
        print(f"\nRun {handle.id}\n  user: {DEMO_PROMPT}")
        follower = asyncio.create_task(follow_turns(client, handle))
        # Kill worker A while it runs its second tool call: mid-turn, after a checkpoint.
        await first.wait_for(") started", count=2)
        first.kill()
        print(f"  ✗ worker A killed with SIGKILL in the middle of a turn (pid {first.process.pid})")
        second = WorkerProcess("worker B", server, loop)
        workers.append(second)
        await second.wait_for("worker ready")
        print(
            f"  worker B started (pid {second.process.pid}); the interrupted turn is retried "
            f"once worker A misses its {options.heartbeat_timeout.total_seconds():.0f}s heartbeat"
        )
        result = await handle.result()
        await follower
        rerun = [c for c in second.tool_calls if c in first.tool_calls[:-1]]
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
