"""Per-turn engine overhead: Ratchet against a bare temporalio activity loop.

    .venv/bin/python -m bench.overhead [--steps 100] [--rounds 5]

Both sides run N tool steps plus a final answer, one activity per turn, on one dev
server and one worker process, alternating round by round so machine noise hits
both alike. A Ratchet turn runs a real ToolCallingAgent (an in-process scripted
model and a tool returning 2,000 characters); the bare loop's activity returns
the same two messages as plain dicts. The difference is what Ratchet adds per
turn: typed messages and state, thread handling, checkpoints, heartbeats, UI
summaries. Fast mode (local activities) is compared with a bare local-activity
loop the same way. Rounds alternate the engines' order (ABBA); figures are
medians of the rounds; ratios are of the medians. Then throughput: ``--concurrent``
runs of 20 steps started at once on the one worker, steps per second.

The worker runs in its own process (``--serve``), apart from the dev server and
from this one, which starts the runs: each figure also has the worker process's
user + system CPU per turn (from ``/proc``), which depends far less on the
machine's load than wall time.

``--sandbox`` says which workflows run in temporalio's workflow sandbox: by default
the bare loops (temporalio's default) and not Ratchet's (``ratchet.workflows._sandbox``),
each as it ships; ``all`` and ``none`` measure both the same way, into
``overhead_sandbox_all.json`` and ``overhead_sandbox_none.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow

from ratchet.agents import ScriptedModel, ToolCallingAgent, tool
from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.wire import RunOptions
from ratchet.worker import build_worker

RESULTS = Path(__file__).parent / "results"
TOOL_RESULT = "x" * 2000


@tool
def fetch(page: int) -> str:
    """Fetch a page (2,000 characters)."""
    return TOOL_RESULT


@activity.defn(name="bare.turn")
async def bare_turn(turn: int) -> list[dict]:
    """One turn's new messages, without any engine."""
    call = {"id": f"call_{turn}", "name": "fetch", "arguments": json.dumps({"page": turn})}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "content": TOOL_RESULT, "tool_call_id": call["id"]},
    ]


SANDBOX_MODES = {
    # mode: (Ratchet's workflows in the sandbox, the bare loops in it), result file
    "bare": ((False, True), "overhead.json"),  # as each ships: temporalio's default
    "all": ((True, True), "overhead_sandbox_all.json"),
    "none": ((False, False), "overhead_sandbox_none.json"),
}


@workflow.defn(name="BareLoop", sandboxed=os.environ.get("BENCH_BARE_SANDBOX", "1") == "1")
class BareLoop:
    @workflow.run
    async def run(self, steps: int, local: bool) -> int:
        messages = 0
        for turn in range(steps + 1):
            if local:
                added = await workflow.execute_local_activity(
                    bare_turn, turn, start_to_close_timeout=timedelta(minutes=1)
                )
            else:
                added = await workflow.execute_activity(
                    bare_turn, turn, start_to_close_timeout=timedelta(minutes=1)
                )
            messages += len(added)
        return messages


def scripted(steps: int) -> ScriptedModel:
    return ScriptedModel(
        lambda messages, context: (
            ScriptedModel.call("fetch", page=context.turn) if context.turn <= steps else "done"
        )
    )


CONCURRENT_STEPS = 20


ENGINES = ("ratchet", "bare", "ratchet_fast", "bare_local")
TASK_QUEUE = "overhead"


async def serve(address: str, steps: int) -> None:
    """The bench's worker process: Ratchet's agents and the bare loops, until SIGTERM."""
    client = await AgentClient.connect(address, task_queue=TASK_QUEUE)
    agents = {
        f"pager{n}": ToolCallingAgent(scripted(n), [fetch]) for n in (steps, CONCURRENT_STEPS)
    }
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with build_worker(client, agents, workflows=[BareLoop], activities=[bare_turn]):
        print("ready", flush=True)
        await stop.wait()


class WorkerProcess:
    """``--serve`` in a child process, and its CPU time."""

    def __init__(self, address: str, steps: int) -> None:
        command = [sys.executable, "-m", "bench.overhead", "--serve", address]
        command += ["--steps", str(steps)]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=os.environ)
        assert self.process.stdout is not None
        if self.process.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the bench's worker did not start (exit {self.process.wait()})")
        # Whatever else it prints is read, so a full pipe never blocks it.
        threading.Thread(target=self.process.stdout.read, daemon=True).start()

    def cpu(self) -> float:
        """User + system CPU seconds the worker process has used so far."""
        with open(f"/proc/{self.process.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=60)


async def timed(worker: WorkerProcess, turns: int, work) -> tuple[float, float]:
    """Wall ms and worker CPU ms per turn of ``work``."""
    cpu, started = worker.cpu(), time.perf_counter()
    await work
    wall = (time.perf_counter() - started) * 1000 / turns
    return wall, (worker.cpu() - cpu) * 1000 / turns


async def one_run(client: AgentClient, name: str, steps: int) -> None:
    if name.startswith("ratchet"):
        options = RunOptions(max_turns=steps + 5, fast=name.endswith("fast"))
        handle = await client.start_run(f"pager{steps}", "go", options=options)
        await handle.result()
    else:
        await client.temporal.execute_workflow(
            BareLoop.run,
            args=[steps, name.endswith("local")],
            id=f"bare-{uuid.uuid4().hex[:8]}",
            task_queue=TASK_QUEUE,
        )


def median(values: list[float], digits: int = 2) -> float:
    return round(statistics.median(values), digits)


def ratio(medians: dict[str, float], engine: str, bare: str) -> float:
    return round(medians[engine] / medians[bare], 2)


async def measure(steps: int, rounds: int, concurrent: int, concurrent_rounds: int) -> dict:
    wall: dict[str, list[float]] = {name: [] for name in ENGINES}
    cpu: dict[str, list[float]] = {name: [] for name in ENGINES}
    rate: dict[str, list[float]] = {name: [] for name in ENGINES}
    rate_cpu: dict[str, list[float]] = {name: [] for name in ENGINES}
    with DevServer.start(ui=False) as server:
        client = await AgentClient.connect(server.address, task_queue=TASK_QUEUE)
        worker = WorkerProcess(server.address, steps)
        try:
            for lap in range(rounds + 1):  # round 0 warms up and is not counted
                # ABBA: whichever engine runs first in a round is faster on this machine.
                for name in ENGINES if lap % 2 else ENGINES[::-1]:
                    ms, cpu_ms = await timed(worker, steps + 1, one_run(client, name, steps))
                    if lap:
                        wall[name].append(ms)
                        cpu[name].append(cpu_ms)
            turns = concurrent * (CONCURRENT_STEPS + 1)
            for lap in range(concurrent_rounds):
                for name in ENGINES if lap % 2 else ENGINES[::-1]:
                    runs = (one_run(client, name, CONCURRENT_STEPS) for _ in range(concurrent))
                    ms, cpu_ms = await timed(worker, turns, asyncio.gather(*runs))
                    rate[name].append(1000 / ms)
                    rate_cpu[name].append(cpu_ms)
        finally:
            worker.stop()
    ms_per_turn = {name: median(values) for name, values in wall.items()}
    cpu_per_turn = {name: median(values) for name, values in cpu.items()}
    rates = {name: median(values, 1) for name, values in rate.items()}
    rate_cpus = {name: median(values) for name, values in rate_cpu.items()}
    rounded = lambda table, digits=2: {  # noqa: E731
        k: [round(v, digits) for v in vs] for k, vs in table.items()
    }
    return {
        "concurrent_runs": concurrent,
        "concurrent_steps": CONCURRENT_STEPS,
        "steps_per_second_median": rates,
        "steps_per_second_all": rounded(rate, 1),
        "throughput_ratio_default": ratio(rates, "ratchet", "bare"),
        "throughput_ratio_fast": ratio(rates, "ratchet_fast", "bare_local"),
        "concurrent_worker_cpu_ms_per_turn_median": rate_cpus,
        "concurrent_worker_cpu_ms_per_turn_all": rounded(rate_cpu),
        "concurrent_cpu_ratio_default": ratio(rate_cpus, "ratchet", "bare"),
        "concurrent_cpu_ratio_fast": ratio(rate_cpus, "ratchet_fast", "bare_local"),
        "steps": steps,
        "rounds": rounds,
        "ms_per_turn_median": ms_per_turn,
        "ms_per_turn_all": rounded(wall),
        "ratio_ratchet_to_bare_activity_loop": ratio(ms_per_turn, "ratchet", "bare"),
        "ratio_fast_mode_to_bare_local_activity_loop": ratio(
            ms_per_turn, "ratchet_fast", "bare_local"
        ),
        "worker_cpu_ms_per_turn_median": cpu_per_turn,
        "worker_cpu_ms_per_turn_all": rounded(cpu),
        "cpu_ratio_default": ratio(cpu_per_turn, "ratchet", "bare"),
        "cpu_ratio_fast": ratio(cpu_per_turn, "ratchet_fast", "bare_local"),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--concurrent", type=int, default=50)
    parser.add_argument("--concurrent-rounds", type=int, default=4)
    parser.add_argument(
        "--sandbox",
        choices=SANDBOX_MODES,
        default="bare",
        help="which workflows run in temporalio's sandbox: the bare loops only (as "
        "each ships, the default), all, or none",
    )
    parser.add_argument("--serve", metavar="ADDRESS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    (ratchet_sandboxed, bare_sandboxed), out = SANDBOX_MODES[args.sandbox]
    os.environ["RATCHET_WORKFLOW_SANDBOX"] = "1" if ratchet_sandboxed else "0"
    os.environ["BENCH_BARE_SANDBOX"] = "1" if bare_sandboxed else "0"  # the worker's
    logging.getLogger("temporalio").setLevel(logging.ERROR)
    if args.serve:
        asyncio.run(serve(args.serve, args.steps))
        return
    result = asyncio.run(measure(args.steps, args.rounds, args.concurrent, args.concurrent_rounds))
    result["command"] = (
        f"python -m bench.overhead --steps {args.steps} --rounds {args.rounds} "
        f"--concurrent {args.concurrent} --concurrent-rounds {args.concurrent_rounds}"
        + (f" --sandbox {args.sandbox}" if args.sandbox != "bare" else "")
    )
    result["sandboxed"] = {"ratchet": ratchet_sandboxed, "bare": bare_sandboxed}
    print(json.dumps(result, indent=2))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
