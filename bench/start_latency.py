"""From starting a run until its model is called, against a bare workflow.

    .venv/bin/python -m bench.start_latency [--rounds 60]

Ratchet: ``client.start_run`` until a scripted agent's turn begins. Bare: a
sandboxed workflow started with ``start_workflow`` until its one activity runs.
One worker each on one dev server, order alternating (ABBA), medians after 10
warm-ups each.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import uuid

from temporalio.worker import Worker

from ratchet.agents import Agent, Result, RunContext, Thread
from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.types import Message
from ratchet.worker import build_worker

from .bare_workflows import CALLED, BareRunWorkflow, bare_step
from .sessions import RESULTS


class Called(Agent):
    def __init__(self, called: asyncio.Queue) -> None:
        self.called = called

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        self.called.put_nowait(time.perf_counter())
        return Result(final_response=Message.assistant("ok"))


async def measure(rounds: int) -> dict:
    called: asyncio.Queue = asyncio.Queue()
    CALLED[:] = [called]
    with DevServer.start(ui=False) as server:
        client = await AgentClient.connect(server.address, task_queue="start")
        async with (
            build_worker(client, {"called": Called(called)}),
            Worker(
                client.temporal,
                task_queue="bare-start",
                workflows=[BareRunWorkflow],
                activities=[bare_step],
            ),
        ):

            async def ours() -> float:
                started = time.perf_counter()
                handle = await client.start_run("called", "hi")
                at = await called.get()
                await handle.result()
                return at - started

            async def theirs() -> float:
                started = time.perf_counter()
                handle = await client.temporal.start_workflow(
                    BareRunWorkflow.run,
                    "hi",
                    id=f"bare-{uuid.uuid4().hex[:8]}",
                    task_queue="bare-start",
                )
                at = await called.get()
                await handle.result()
                return at - started

            for _ in range(10):
                await ours()
                await theirs()
            a, b = [], []
            for i in range(rounds):
                if i % 2 == 0:
                    a.append(await ours())
                    b.append(await theirs())
                else:
                    b.append(await theirs())
                    a.append(await ours())
    return {
        "command": f"python -m bench.start_latency --rounds {rounds}",
        "rounds": rounds,
        "start_run_to_model_ms": round(statistics.median(a) * 1000, 1),
        "bare_start_to_activity_ms": round(statistics.median(b) * 1000, 1),
        "ratio": round(statistics.median(a) / statistics.median(b), 2),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args()
    report = asyncio.run(measure(args.rounds))
    (RESULTS / "start_latency.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
