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
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import time
import uuid
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow

from ratchet.agents import ScriptedModel, ToolCallingAgent, tool
from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.wire.options import RunOptions
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


@workflow.defn(name="BareLoop")
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
            task_queue="overhead",
        )


async def measure(steps: int, rounds: int, concurrent: int, concurrent_rounds: int) -> dict:
    times: dict[str, list[float]] = {
        "ratchet": [],
        "bare": [],
        "ratchet_fast": [],
        "bare_local": [],
    }
    with DevServer.start(ui=False) as server:
        client = await AgentClient.connect(server.address, task_queue="overhead")
        agents = {
            f"pager{n}": ToolCallingAgent(scripted(n), [fetch]) for n in (steps, CONCURRENT_STEPS)
        }
        async with build_worker(client, agents, workflows=[BareLoop], activities=[bare_turn]):
            names = list(times)
            for lap in range(rounds + 1):  # round 0 warms up and is not counted
                # ABBA: whichever engine runs first in a round is faster on this machine.
                for name in names if lap % 2 else names[::-1]:
                    started = time.perf_counter()
                    await one_run(client, name, steps)
                    if lap:
                        times[name].append((time.perf_counter() - started) * 1000 / (steps + 1))
            throughput: dict[str, list[float]] = {name: [] for name in names}
            for lap in range(concurrent_rounds):
                for name in names if lap % 2 else names[::-1]:
                    started = time.perf_counter()
                    await asyncio.gather(
                        *(one_run(client, name, CONCURRENT_STEPS) for _ in range(concurrent))
                    )
                    elapsed = time.perf_counter() - started
                    throughput[name].append(concurrent * (CONCURRENT_STEPS + 1) / elapsed)
    medians = {name: round(statistics.median(values), 2) for name, values in times.items()}
    rates = {name: round(statistics.median(values), 1) for name, values in throughput.items()}
    return {
        "concurrent_runs": concurrent,
        "concurrent_steps": CONCURRENT_STEPS,
        "steps_per_second_median": rates,
        "steps_per_second_all": {k: [round(v, 1) for v in vs] for k, vs in throughput.items()},
        "throughput_ratio_default": round(rates["ratchet"] / rates["bare"], 2),
        "throughput_ratio_fast": round(rates["ratchet_fast"] / rates["bare_local"], 2),
        "steps": steps,
        "rounds": rounds,
        "ms_per_turn_median": medians,
        "ms_per_turn_all": {k: [round(v, 2) for v in vs] for k, vs in times.items()},
        "ratio_ratchet_to_bare_activity_loop": round(medians["ratchet"] / medians["bare"], 2),
        "ratio_fast_mode_to_bare_local_activity_loop": round(
            medians["ratchet_fast"] / medians["bare_local"], 2
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--concurrent", type=int, default=50)
    parser.add_argument("--concurrent-rounds", type=int, default=4)
    args = parser.parse_args()
    logging.getLogger("temporalio").setLevel(logging.ERROR)
    result = asyncio.run(measure(args.steps, args.rounds, args.concurrent, args.concurrent_rounds))
    result["command"] = (
        f"python -m bench.overhead --steps {args.steps} --rounds {args.rounds} "
        f"--concurrent {args.concurrent} --concurrent-rounds {args.concurrent_rounds}"
    )
    print(json.dumps(result, indent=2))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "overhead.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
