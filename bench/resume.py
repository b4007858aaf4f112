"""Resume after a SIGKILL: how long until a killed worker's turn runs again elsewhere.

    .venv/bin/python -m bench.resume [--kills 10]

Default options (10 s heartbeat timeout, 1 s initial retry interval). Worker
processes (``python -m ratchet.worker``, ``tests.logged_agents:AGENTS``) on one dev
server. Each sample runs the ``crash`` agent: a model call held until a second
worker is ready, then the ``work`` tool, which SIGKILLs its own worker 0.5 s in.
The retried attempt skips the checkpointed model call and starts the tool again
on the other worker; "resume" is the kill until that tool start (both logged by
the workers, wall clock, one machine). Two scenarios, ``--kills`` samples each:

- ``turn_worker``: workflows on one worker, turns on another task queue; the
  killed worker held only the turn.
- ``workflow_and_turn_worker``: the killed worker held the turn and the run's
  workflow (sticky), and the thread (a 20 KB prompt, so by reference) must be
  paged in by the new worker from the workflow, now on another worker.

Then heartbeat cost: one turn whose model call takes 60 s, and the dev server's
count of RecordActivityTaskHeartbeat requests at its frontend (Prometheus
metrics) over it, the SDK's liveness heartbeats and the turn's own together,
per minute of running turn. Targets (issue 14): resume median <= 5 s, max <= 10 s;
<= 60 heartbeat RPCs per running turn per minute.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path

from ratchet.client import AgentClient
from ratchet.devserver import DevServer, free_port
from ratchet.process import hard_exit
from ratchet.testing import WorkerProcess
from ratchet.wire import RunOptions
from tests.conftest import release, worker_process
from tests.logged_agents import EventLog

from ._results import write_result

RESULTS = Path(__file__).parent / "results"
PAD = "x" * 20_000


class Bench:
    def __init__(self, server: DevServer, work: Path) -> None:
        self.server = server
        self.work = work
        self.log_path = work / "events.log"
        self.log_path.touch()
        self.log = EventLog(self.log_path)
        self.workers: list[WorkerProcess] = []

    def worker(self, task_queue: str) -> WorkerProcess:
        worker = worker_process(self.server, task_queue, self.log_path).wait_ready()
        self.workers.append(worker)
        return worker

    async def wait_for(self, kind: str, run: str, attempt: int) -> dict:
        while True:
            for record in self.log.read():
                if record["kind"] == kind and record["run"] == run and record["attempt"] == attempt:
                    return record
            await asyncio.sleep(0.02)

    async def sample(self, client: AgentClient, turns_queue: str, pad: bool) -> float:
        """One kill; returns seconds from the kill to the retried tool's start."""
        plan = {"hold": True, "kill_after": 0.5, **({"pad": PAD} if pad else {})}
        options = RunOptions(task_queue=turns_queue)
        handle = await client.start_run("crash", json.dumps(plan), options=options)
        await self.wait_for("model_start", handle.id, 1)
        self.worker(turns_queue)  # where the turn goes after the kill
        release(self.log_path, handle.id, "model")
        result = await handle.result()
        assert result.output == "worked", result
        kill = await self.wait_for("kill", handle.id, 1)
        again = await self.wait_for("tool_start", handle.id, 2)
        assert again["pid"] != kill["pid"]
        return again["time"] - kill["time"]

    def stop(self) -> None:
        for worker in self.workers:
            worker.stop()


async def scenario_turn_worker(bench: Bench, kills: int) -> list[float]:
    queue = "resume-a"
    client = await AgentClient.connect(bench.server.address, task_queue=queue)
    bench.worker(queue)  # workflows (and nothing else reaches it)
    bench.worker(f"{queue}-turns")
    return [await bench.sample(client, f"{queue}-turns", pad=False) for _ in range(kills)]


async def scenario_workflow_and_turn_worker(bench: Bench, kills: int) -> list[float]:
    queue = "resume-b"
    client = await AgentClient.connect(bench.server.address, task_queue=queue)
    bench.worker(queue)
    return [await bench.sample(client, queue, pad=True) for _ in range(kills)]


def heartbeat_requests(metrics_port: int) -> float:
    """Heartbeat requests the server's frontend has answered (its history service
    counts each once more)."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics").read().decode()
    pattern = re.compile(
        r'^service_requests\{[^}]*operation="RecordActivityTaskHeartbeat",'
        r'service_name="frontend"\} (\S+)$'
    )
    return sum(float(m.group(1)) for line in text.splitlines() if (m := pattern.match(line)))


async def heartbeat_cost(bench: Bench, metrics_port: int, seconds: float) -> dict:
    queue = "resume-hb"
    client = await AgentClient.connect(bench.server.address, task_queue=queue)
    bench.worker(queue)
    before = heartbeat_requests(metrics_port)
    started = time.monotonic()
    await client.run("crash", json.dumps({"latency": seconds}))
    elapsed = time.monotonic() - started
    sent = heartbeat_requests(metrics_port) - before
    return {
        "running_turn_seconds": round(elapsed, 1),
        "heartbeat_requests": int(sent),
        "per_running_turn_per_minute": round(sent / elapsed * 60, 1),
    }


def summary(samples: list[float]) -> dict:
    return {
        "median_s": round(statistics.median(samples), 2),
        "max_s": round(max(samples), 2),
        "min_s": round(min(samples), 2),
        "samples_s": [round(s, 2) for s in samples],
    }


async def measure(args: argparse.Namespace) -> dict:
    work = Path(tempfile.mkdtemp(prefix="bench-resume-"))
    metrics_port = free_port()
    server = DevServer.start(
        ui=False, log_dir=work, extra_args=["--metrics-port", str(metrics_port)]
    )
    bench = Bench(server, work)
    try:
        turn_worker = await scenario_turn_worker(bench, args.kills)
        both = await scenario_workflow_and_turn_worker(bench, args.kills)
        heartbeats = await heartbeat_cost(bench, metrics_port, args.turn_seconds)
    finally:
        bench.stop()
        server.stop()
    return {
        **retry_defaults(),
        "turn_worker": summary(turn_worker),
        "workflow_and_turn_worker": summary(both),
        "heartbeats": heartbeats,
    }


def retry_defaults() -> dict[str, float]:
    """What bounds resumption by default: the heartbeat timeout and retry interval."""
    defaults = RunOptions()
    beat = defaults.heartbeat_timeout
    return {
        "heartbeat_timeout_s": beat.total_seconds() if beat is not None else 0.0,
        "initial_retry_interval_s": defaults.initial_retry_interval.total_seconds(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--turn-seconds", type=float, default=60.0)
    parser.add_argument("--out", type=Path, default=RESULTS / "resume.json")
    args = parser.parse_args()
    result = asyncio.run(measure(args))
    write_result(result, args.out, "resume")


if __name__ == "__main__":
    main()
    hard_exit(0)  # the SDK's runtime can abort the interpreter at exit
