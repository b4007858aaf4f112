"""What eager activity dispatch saves per turn, and what fairness flags cost.

    .venv/bin/python -m bench.eager_dispatch

A bare temporalio workflow runs 60 trivial activities one after another on a dev
server of its own, with eager activity execution on (the SDK's default) and off
(``ratchet worker --rate-limited``: every activity goes through the server's queue,
so a queue rate limit and fairness keys see it), on a server with and without the
fairness flags (``matching.useNewMatcher``, ``matching.enableFairness``). The four
cases run in ABBA order, twice; figures are per activity, medians of the two.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
import uuid
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker

from ratchet.devserver import DevServer

STEPS = 60
RESULTS = Path(__file__).parent / "results" / "eager_dispatch.json"


@activity.defn
async def step(n: int) -> int:
    return n + 1


@workflow.defn(sandboxed=False)
class Loop:
    @workflow.run
    async def run(self, n: int) -> int:
        for i in range(n):
            await workflow.execute_activity(step, i, start_to_close_timeout=timedelta(seconds=10))
        return n


async def per_activity_ms(fairness: bool, eager: bool) -> float:
    with DevServer.start(ui=False, fairness=fairness) as server:
        client = await Client.connect(server.address)
        queue = f"eager-{uuid.uuid4().hex[:6]}"
        async with Worker(
            client,
            task_queue=queue,
            workflows=[Loop],
            activities=[step],
            disable_eager_activity_execution=not eager,
        ):
            await client.execute_workflow(Loop.run, 5, id=uuid.uuid4().hex, task_queue=queue)
            started = time.perf_counter()
            await client.execute_workflow(Loop.run, STEPS, id=uuid.uuid4().hex, task_queue=queue)
            return (time.perf_counter() - started) / STEPS * 1000


async def main() -> None:
    cases = [(False, True), (True, True), (False, False), (True, False)]
    order = cases + cases[::-1]
    found: dict[str, list[float]] = {}
    for fairness, eager in order:
        name = f"{'eager' if eager else 'through_queue'}_{'fair' if fairness else 'plain'}"
        found.setdefault(name, []).append(round(await per_activity_ms(fairness, eager), 1))
        print(name, found[name][-1], "ms per activity", flush=True)
    medians = {name: statistics.median(values) for name, values in found.items()}
    result = {
        "command": "python -m bench.eager_dispatch",
        "steps": STEPS,
        "ms_per_activity": found,
        "ms_per_activity_median": medians,
        "through_queue_minus_eager_ms": round(
            medians["through_queue_plain"] - medians["eager_plain"], 1
        ),
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
