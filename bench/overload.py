"""Stale attempts under overload: no tool starts for an attempt the server gave away.

    .venv/bin/python -m bench.overload [--runs 100] [--burners 14] [--latency 1.0]

A dev server and two worker processes (``tests.logged_agents:AGENTS``, default options,
so a 3 s heartbeat timeout) share a machine with ``--burners`` busy-loop processes
(load average well over the CPU count). The workers' threads run at
``--worker-nice`` (5: about a third of a burner's share of CPU each), so their
heartbeats come late, as on a machine overloaded by something more important (at
19 the runs did not finish in 15 minutes).
``--runs`` runs of the ``crash`` agent start at once: turn 1 is a model call of
``--latency`` seconds, then the ``work`` tool; turn 2 answers. The server times
attempts out and gives their turns to other workers while the old attempts still
run. Every tool start is logged (run, attempt, idempotency key, time).

Checked against each run's history (``RunHandle.turns()``):

- ``late_tool_starts``: tool starts of an attempt that began after the turn had
  completed (closed) in history, i.e. a stale attempt doing a side effect another
  attempt already did. Target 0.
- ``foreign_keys``: tool starts whose idempotency key differs from the key of the
  attempt that completed the turn (a side effect the payment API could not
  de-duplicate). Target 0.
- ``stale_stops``: attempts that stopped at their check (``StaleAttemptError``,
  the worker's warning) or were cancelled by the SDK's heartbeat; how often the
  check had something to catch.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.process import hard_exit
from ratchet.testing import WorkerProcess
from tests.conftest import worker_process
from tests.logged_agents import EventLog

from ._results import write_result

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).resolve().parent.parent
STALE_WARNING = "no longer knows this attempt"


class LoadSampler:
    """Samples the one-minute load average once a second in a thread."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            self.samples.append(os.getloadavg()[0])

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def start_burners(n: int) -> list[subprocess.Popen[bytes]]:
    return [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
        for _ in range(n)
    ]


def renice(pid: int, nice: int) -> None:
    """Set every thread of ``pid`` to ``nice`` (Linux sets priority per thread)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        os.setpriority(os.PRIO_PROCESS, int(task.name), nice)


async def wait_for_load(target: float, within: float = 120) -> float:
    """The one-minute average lags; wait until it shows the load (or give up)."""
    deadline = time.monotonic() + within
    while os.getloadavg()[0] < target and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(1)
    return os.getloadavg()[0]


async def overload(args: argparse.Namespace) -> dict:
    work = Path(tempfile.mkdtemp(prefix="bench-overload-"))
    log = work / "events.log"
    log.touch()
    server = DevServer.start(ui=False, log_dir=work)
    burners: list[subprocess.Popen[bytes]] = []
    workers: list[WorkerProcess] = []
    try:
        client = await AgentClient.connect(server.address, task_queue="overload")
        workers = [worker_process(server, "overload", log) for _ in range(2)]
        for worker in workers:
            worker.wait_ready()
            renice(worker.pid, args.worker_nice)
        burners = start_burners(args.burners)
        load_at_start = await wait_for_load(args.min_load)
        plan = json.dumps({"latency": args.latency})
        with LoadSampler() as load:
            started = time.monotonic()
            handles = await asyncio.gather(
                *(client.start_run("crash", plan) for _ in range(args.runs))
            )
            results = await asyncio.gather(*(h.result() for h in handles), return_exceptions=True)
            elapsed = time.monotonic() - started
            turns = {h.id: await h.turns() for h in handles}
        failed = [str(r) for r in results if isinstance(r, BaseException)]
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
        for worker in workers:
            worker.stop()
        server.stop()

    records = EventLog(log).read()
    late = foreign = retried_turns = 0
    for run, run_turns in turns.items():
        first = next(t for t in run_turns if t.turn == 1)
        if len(first.attempts) > 1:
            retried_turns += 1
        winner = first.attempts[-1].attempt if first.status == "completed" else None
        starts = [r for r in records if r["kind"] == "tool_start" and r["run"] == run]
        winning_keys = {r["key"] for r in starts if r["attempt"] == winner}
        closed = first.closed_at.timestamp() if first.closed_at else float("inf")
        for start in starts:
            late += start["time"] > closed
            foreign += bool(winning_keys) and start["key"] not in winning_keys
    stale_stops = sum(line.count(STALE_WARNING) for w in workers for line in w.lines)
    cancelled = sum(1 for r in records if r["kind"] == "model_cancelled")
    return {
        "runs": args.runs,
        "completed": args.runs - len(failed),
        "failures": failed[:5],
        "burners": args.burners,
        "worker_nice": args.worker_nice,
        "cpus": os.cpu_count(),
        "load_average_at_start": round(load_at_start, 1),
        "load_average_median": round(statistics.median(load.samples), 1) if load.samples else None,
        "load_average_max": round(max(load.samples), 1) if load.samples else None,
        "seconds": round(elapsed, 1),
        "turns_retried": retried_turns,
        "tool_starts": sum(1 for r in records if r["kind"] == "tool_start"),
        "late_tool_starts": late,
        "foreign_keys": foreign,
        "stale_stops": stale_stops,
        "model_calls_cancelled": cancelled,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--burners", type=int, default=14)
    parser.add_argument("--min-load", type=float, default=12.0)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--worker-nice", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS / "overload.json")
    args = parser.parse_args()
    result = asyncio.run(overload(args))
    write_result(result, args.out, "overload")


if __name__ == "__main__":
    main()
    hard_exit(0)  # the SDK's runtime can abort the interpreter at exit
