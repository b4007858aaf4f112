"""Checkpoints against SIGKILL: does a retried turn call the model again?

    .venv/bin/python -m bench.checkpoints [--kills 5]

Default options. The ``crash`` agent (``tests.logged_agents``) calls the model once
(``latency`` seconds; it streams a few words and calls ``work``), then the ``work``
tool, which SIGKILLs its own worker ``kill_after`` seconds in. The model step was
checkpointed with an acknowledged heartbeat before the tool started, and no heartbeat
sent earlier may replace it, so the retried attempt on another worker must take the
model's reply from the checkpoint: exactly one model call for turn 1, and a watcher
following the run's events live (``RunHandle.events()``) never gets the reply's words
from the retried attempt. Model latency 0 (at once), 0.05 s, 0.5 s and 3 s; kill
0.1 s, 0.5 s, 1 s and 2 s into the tool call; each with and without a watcher;
``--kills`` runs each (5 by default: 160 kills). The four kill delays run as four
lanes at once (own task queue, two worker processes each, a killed worker replaced
while the server waits out its heartbeat timeout), the cells of a lane one after the
other. Target (issue 28): zero repeated model calls, zero repeated text deltas.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from ratchet.client import AgentClient, RunHandle
from ratchet.devserver import DevServer
from ratchet.process import hard_exit
from tests.conftest import worker_process
from tests.logged_agents import EventLog

from ._results import write_result

RESULTS = Path(__file__).parent / "results"
LATENCIES = (0.0, 0.05, 0.5, 3.0)
KILL_AFTER = (0.1, 0.5, 1.0, 2.0)
WATCHED = (False, True)


async def turn_1_deltas(handle: RunHandle) -> list[int]:
    """The attempt of each text delta of turn 1 a live watcher receives."""
    return [e.attempt async for e in handle.events() if e.kind == "text_delta" and e.turn == 1]


async def lane(
    server: DevServer, log_path: Path, kill_after: float, args: argparse.Namespace
) -> list[dict]:
    queue = f"checkpoints-{kill_after}"
    client = await AgentClient.connect(server.address, task_queue=queue)
    workers = [worker_process(server, queue, log_path) for _ in range(2)]
    runs: list[dict] = []
    try:
        for worker in workers:
            await asyncio.to_thread(worker.wait_ready)
        for latency in args.latencies:
            for watched in WATCHED:
                for _ in range(args.kills):
                    plan = json.dumps({"latency": latency, "kill_after": kill_after})
                    handle = await client.start_run("crash", plan)
                    watcher = asyncio.ensure_future(turn_1_deltas(handle)) if watched else None
                    ended = asyncio.ensure_future(handle.result())
                    workers = await replaced(workers, ended, server, queue, log_path)
                    result = await ended
                    assert result.output == "worked", result
                    deltas = await watcher if watcher is not None else []
                    runs.append(
                        {"latency": latency, "watched": watched, "id": handle.id, "deltas": deltas}
                    )
    finally:
        for worker in workers:
            worker.stop()
    return runs


async def replaced(workers: list, ended: asyncio.Future, *where: Any) -> list:
    """The workers once one that died (killed itself) is replaced, while the server
    waits out its heartbeat timeout; as they are if the run ends first."""
    while all(w.process.poll() is None for w in workers) and not ended.done():  # noqa: ASYNC110 - a process's exit
        await asyncio.sleep(0.05)
    alive = [w for w in workers if w.process.poll() is None]
    for _ in range(len(workers) - len(alive)):
        replacement = worker_process(*where)
        await asyncio.to_thread(replacement.wait_ready)
        alive.append(replacement)
    return alive


def case(kill_after: float, latency: float, watched: bool, runs: list[dict], records: list[dict]):
    mine = [r for r in runs if r["latency"] == latency and r["watched"] == watched]
    ids = {r["id"] for r in mine}
    logged = [r for r in records if r.get("run") in ids]
    calls = [r for r in logged if r["kind"] == "model_start" and r["turn"] == 1]
    retried = {r["run"] for r in logged if r["kind"] == "tool_start" and r["attempt"] > 1}
    deltas = [attempt for r in mine for attempt in r["deltas"]]
    return {
        "model_latency_s": latency,
        "kill_after_s": kill_after,
        "watched": watched,
        "runs": len(ids),
        "kills": sum(1 for r in logged if r["kind"] == "kill"),
        "turns_retried": len(retried),
        "turn_1_model_calls": len(calls),
        "repeated_model_calls": len(calls) - len(ids),
        # What the watcher got of the reply's words: from the killed attempt (when they
        # left its worker before the kill), and again from a retried attempt.
        "text_deltas": len(deltas),
        "repeated_text_deltas": sum(1 for attempt in deltas if attempt > 1),
    }


async def measure(args: argparse.Namespace) -> dict:
    work = Path(tempfile.mkdtemp(prefix="bench-checkpoints-"))
    log_path = work / "events.log"
    log_path.touch()
    server = DevServer.start(ui=False, log_dir=work)
    try:
        lanes = await asyncio.gather(*(lane(server, log_path, k, args) for k in args.kill_after))
    finally:
        server.stop()
    records = EventLog(log_path).read()
    cases = [
        case(kill_after, latency, watched, runs, records)
        for kill_after, runs in zip(args.kill_after, lanes, strict=True)
        for latency in args.latencies
        for watched in WATCHED
    ]
    return {
        "cases": cases,
        "kills": sum(c["kills"] for c in cases),
        "repeated_model_calls": sum(c["repeated_model_calls"] for c in cases),
        "repeated_text_deltas": sum(c["repeated_text_deltas"] for c in cases),
    }


def seconds(text: str) -> tuple[float, ...]:
    return tuple(float(part) for part in text.split(","))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=5, help="kills per cell")
    parser.add_argument("--latencies", type=seconds, default=LATENCIES, help="e.g. 0.05,0.5,3")
    parser.add_argument("--kill-after", type=seconds, default=KILL_AFTER, help="e.g. 0.1,2")
    parser.add_argument("--out", type=Path, default=RESULTS / "checkpoints.json")
    args = parser.parse_args()
    result = asyncio.run(measure(args))
    write_result(result, args.out, "checkpoints")


if __name__ == "__main__":
    main()
    hard_exit(0)  # the SDK's runtime can abort the interpreter at exit
