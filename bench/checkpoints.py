"""Checkpoints against SIGKILL: does a retried turn call the model again?

    .venv/bin/python -m bench.checkpoints [--kills 10]

Default options. The ``crash`` agent (``tests.agents``) calls the model once
(``latency`` seconds), then the ``work`` tool, which SIGKILLs its own worker
``kill_after`` seconds in. The model step was checkpointed with an acknowledged
heartbeat before the tool started, so the retried attempt on another worker must
take the model's reply from the checkpoint: exactly one model call for turn 1.
Model latency 3 s and 10 s, kill 0.5 s, 1 s and 2 s into the tool call,
``--kills`` each (60 by default). The three kill delays run as three lanes at
once (own task queue, two worker processes each, a killed worker replaced),
latencies one after the other. Target (issue 14): zero repeated model calls.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

from ratchet._exit import hard_exit
from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from tests.agents import EventLog
from tests.conftest import worker_process

RESULTS = Path(__file__).parent / "results"
LATENCIES = (3.0, 10.0)
KILL_AFTER = (0.5, 1.0, 2.0)


async def lane(
    server: DevServer, log_path: Path, kill_after: float, kills: int
) -> list[tuple[float, str]]:
    queue = f"checkpoints-{kill_after}"
    client = await AgentClient.connect(server.address, task_queue=queue)
    workers = [worker_process(server, queue, log_path) for _ in range(2)]
    runs: list[tuple[float, str]] = []
    try:
        for worker in workers:
            await asyncio.to_thread(worker.wait_ready)
        for latency in LATENCIES:
            for _ in range(kills):
                plan = json.dumps({"latency": latency, "kill_after": kill_after})
                handle = await client.start_run("crash", plan)
                result = await handle.result()
                assert result.output == "worked", result
                runs.append((latency, handle.id))
                alive = [w for w in workers if w.process.poll() is None]
                for _ in range(len(workers) - len(alive)):
                    replacement = worker_process(server, queue, log_path)
                    await asyncio.to_thread(replacement.wait_ready)
                    alive.append(replacement)
                workers = alive
    finally:
        for worker in workers:
            worker.stop()
    return runs


async def measure(args: argparse.Namespace) -> dict:
    work = Path(tempfile.mkdtemp(prefix="bench-checkpoints-"))
    log_path = work / "events.log"
    log_path.touch()
    server = DevServer.start(ui=False, log_dir=work)
    try:
        lanes = await asyncio.gather(*(lane(server, log_path, k, args.kills) for k in KILL_AFTER))
    finally:
        server.stop()
    records = EventLog(log_path).read()
    cases = []
    for kill_after, runs in zip(KILL_AFTER, lanes, strict=True):
        for latency in LATENCIES:
            ids = [run for lat, run in runs if lat == latency]
            mine = [r for r in records if r.get("run") in ids]
            kills = sum(1 for r in mine if r["kind"] == "kill")
            calls = [r for r in mine if r["kind"] == "model_start" and r["turn"] == 1]
            retried = {r["run"] for r in mine if r["kind"] == "tool_start" and r["attempt"] > 1}
            cases.append(
                {
                    "model_latency_s": latency,
                    "kill_after_s": kill_after,
                    "runs": len(ids),
                    "kills": kills,
                    "turns_retried": len(retried),
                    "turn_1_model_calls": len(calls),
                    "repeated_model_calls": len(calls) - len(ids),
                }
            )
    return {
        "cases": cases,
        "kills": sum(c["kills"] for c in cases),
        "repeated_model_calls": sum(c["repeated_model_calls"] for c in cases),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--out", type=Path, default=RESULTS / "checkpoints.json")
    args = parser.parse_args()
    result = asyncio.run(measure(args))
    result["command"] = "python -m bench.checkpoints " + " ".join(sys.argv[1:])
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
    hard_exit(0)  # the SDK's runtime can abort the interpreter at exit
