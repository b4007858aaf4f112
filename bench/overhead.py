"""Per-turn engine overhead: Ratchet against a bare temporalio activity loop.

    .venv/bin/python -m bench.overhead [--steps 100] [--rounds 5]

Both sides run N tool steps plus a final answer, one activity per turn, on one dev
server and one worker process, alternating round by round so machine noise hits
both alike. A Ratchet turn runs a real ToolCallingAgent (an in-process scripted
model and a tool returning 2,000 characters); the bare loop's activity returns
the same two messages as plain dicts. The difference is what Ratchet adds per
turn: typed messages and state, thread handling, checkpoints, heartbeats, UI
summaries. Fast mode (local activities) is compared with a bare local-activity
loop the same way. Figures are medians of the rounds; ratios are of the medians.
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
from ratchet.devserver import DevServer
from ratchet.worker import build_worker
from ratchet.workflows import AgentClient, RunOptions

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


async def measure(steps: int, rounds: int) -> dict:
    times: dict[str, list[float]] = {
        "ratchet": [],
        "bare": [],
        "ratchet_fast": [],
        "bare_local": [],
    }
    with DevServer.start(ui=False) as server:
        client = await AgentClient.connect(server.address, task_queue="overhead")
        agents = {"pager": ToolCallingAgent(scripted(steps), [fetch])}
        async with build_worker(client, agents, workflows=[BareLoop], activities=[bare_turn]):
            for lap in range(rounds + 1):  # round 0 warms up and is not counted
                for name in times:
                    started = time.perf_counter()
                    if name.startswith("ratchet"):
                        options = RunOptions(max_turns=steps + 5, fast=name.endswith("fast"))
                        handle = await client.start_run("pager", "go", options=options)
                        await handle.result()
                    else:
                        await client.temporal.execute_workflow(
                            BareLoop.run,
                            args=[steps, name.endswith("local")],
                            id=f"bare-{uuid.uuid4().hex[:8]}",
                            task_queue="overhead",
                        )
                    if lap:
                        times[name].append((time.perf_counter() - started) * 1000 / (steps + 1))
    medians = {name: round(statistics.median(values), 2) for name, values in times.items()}
    return {
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
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    logging.getLogger("temporalio").setLevel(logging.ERROR)
    result = asyncio.run(measure(args.steps, args.rounds))
    print(json.dumps(result, indent=2))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "overhead.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
