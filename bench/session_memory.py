"""Worker memory per cached idle session, side by side with a bare workflow.

    .venv/bin/python -m bench.session_memory [--count 1000]

Each measurement is a fresh worker process: it starts ``count`` workflows, sends
each one short message (an Update that runs one activity) and leaves them idle
in the worker's cache; the growth of the process's resident memory divided by
``count`` is the cost of one cached idle workflow. The bare workflow is sandboxed,
as workflows are by default. The engines alternate
bare, ratchet, ratchet, bare (ABBA); the medians are reported.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from temporalio.worker import Worker

from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.process import hard_exit
from ratchet.worker import build_worker

from .bare_workflows import BareUpdateWorkflow, bare_step
from .sessions import RESULTS, Tiny


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


async def one(address: str, engine: str, count: int) -> float:
    client = await AgentClient.connect(address, task_queue=f"mem-{engine}-{time.time_ns()}")
    if engine == "ratchet":
        worker = build_worker(client, {"tiny": Tiny}, max_cached_workflows=count + 100)
    else:
        worker = Worker(
            client.temporal,
            task_queue=client.task_queue,
            workflows=[BareUpdateWorkflow],
            activities=[bare_step],
            max_cached_workflows=count + 100,
        )
    async with worker:
        warm = count // 10  # imports, caches and pools settle first
        await _start(client, engine, warm, "warm")
        before = rss_kb()
        await _start(client, engine, count, "idle")
        after = rss_kb()
    return (after - before) / count


async def _start(client: AgentClient, engine: str, count: int, prefix: str) -> None:
    async def start(i: int) -> None:
        if engine == "ratchet":
            session = await client.start_session(
                "tiny", session_id=f"{prefix}-{i}-{time.time_ns()}"
            )
            await session.send("hi")
        else:
            handle = await client.temporal.start_workflow(
                BareUpdateWorkflow.run,
                id=f"{prefix}-{i}-{time.time_ns()}",
                task_queue=client.task_queue,
            )
            await handle.execute_update(BareUpdateWorkflow.send, "hi")

    for batch in range(0, count, 50):
        await asyncio.gather(*(start(i) for i in range(batch, min(count, batch + 50))))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--one", nargs=2, metavar=("ADDRESS", "ENGINE"))
    args = parser.parse_args()
    if args.one:
        print(asyncio.run(one(args.one[0], args.one[1], args.count)), flush=True)
        hard_exit(0)  # the SDK's runtime can abort the interpreter at exit
    results: dict[str, list[float]] = {"bare": [], "ratchet": []}
    with DevServer.start(ui=False) as server:
        for engine in ("bare", "ratchet", "ratchet", "bare"):  # ABBA
            out = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "bench.session_memory",
                    "--count",
                    str(args.count),
                    "--one",
                    server.address,
                    engine,
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            results[engine].append(float(out.stdout.strip().splitlines()[-1]))
            print(engine, results[engine][-1], flush=True)
    bare, ours = statistics.median(results["bare"]), statistics.median(results["ratchet"])
    report = {
        "command": f"python -m bench.session_memory --count {args.count}",
        "count": args.count,
        "kb_per_idle_workflow": {"bare": round(bare, 1), "ratchet_session": round(ours, 1)},
        "runs": results,
        "ratio": round(ours / bare, 2) if bare > 0 else None,
    }
    (RESULTS / "session_memory.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
