"""Where a turn's CPU goes: cProfile of one run, Ratchet and the bare loop.

    .venv/bin/python -m bench.profile_turn [--steps 200]

One N-step run of ``bench.overhead``'s agent (a ToolCallingAgent, a scripted model,
a tool returning 2,000 characters) and one of its bare activity loop, each under
cProfile, worker in this process, dev server in its own. Busy time is the profile's
total less the event loop's idle wait (``epoll``). The busy time is split by own
time into the worker core's calls (the Rust bridge: heartbeats, completions), the
workflow sandbox, Ratchet's own modules, asyncio, the SDK's Python, pydantic and
the rest. cProfile follows the event loop's thread: workflow code, which the SDK
runs in threads of its own, is mostly out of sight (both engines have one workflow
activation per turn).
cProfile also adds a cost per Python call, more to the engine that makes more
calls: read the table as where time goes, not as absolute figures (those are
``bench.overhead``'s). ``bench/results/turn_profile.md`` is a run of it, annotated.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import pstats

from ratchet.agents import ToolCallingAgent
from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.worker import build_worker

from .overhead import TASK_QUEUE, BareLoop, bare_turn, fetch, one_run, scripted

BRIDGE = {
    "call_workflow_service": "heartbeat requests",
    "complete_activity_task": "activity completions",
    "complete_workflow_activation": "workflow activation completions",
}


def attribute(stats: pstats.Stats) -> dict[str, float]:
    """Seconds of busy time by where they were spent (own time, not cumulative)."""
    parts: dict[str, float] = {}
    for (path, _, name), row in stats.stats.items():  # type: ignore[attr-defined]
        own = row[2]
        if name == "<method 'poll' of 'select.epoll' objects>":
            part = "idle (epoll)"
        elif any(key in name for key in BRIDGE):
            part = next(BRIDGE[key] for key in BRIDGE if key in name)
        elif "/ratchet/" in path:
            part = "ratchet: " + path.split("/ratchet/", 1)[1].split("/")[0].removesuffix(".py")
        elif "workflow_sandbox" in path or "_workflow_instance" in path:
            part = "workflow code and sandbox (SDK)"
        elif "/asyncio/" in path or "selectors" in path:
            part = "asyncio"
        elif "/temporalio/" in path:
            part = "SDK Python (activities, client, converters)"
        elif "pydantic" in path or "pydantic" in name:
            part = "pydantic"
        elif "/site-packages/" in path:
            part = "other libraries"
        else:
            part = "builtins and the standard library"
        parts[part] = parts.get(part, 0.0) + own
    return parts


async def profile(steps: int) -> dict[str, dict[str, float]]:
    with DevServer.start(ui=False) as server:
        client = await AgentClient.connect(server.address, task_queue=TASK_QUEUE)
        agents = {f"pager{n}": ToolCallingAgent(scripted(n), [fetch]) for n in (steps, 20)}
        async with build_worker(client, agents, workflows=[BareLoop], activities=[bare_turn]):
            for name in ("ratchet", "bare"):
                await one_run(client, name, 20)  # warm up
            results = {}
            for name in ("ratchet", "bare"):
                profiler = cProfile.Profile()
                profiler.enable()
                await one_run(client, name, steps)
                profiler.disable()
                parts = attribute(pstats.Stats(profiler))
                results[name] = {k: v * 1000 / (steps + 1) for k, v in parts.items()}
            return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    logging.getLogger("temporalio").setLevel(logging.ERROR)
    results = asyncio.run(profile(args.steps))
    print(f"ms per turn by where they went, one run of {args.steps} steps:\n")
    print("| | Ratchet | bare loop |\n|---|---|---|")
    parts = sorted(
        {*results["ratchet"], *results["bare"]}, key=lambda p: -results["ratchet"].get(p, 0)
    )
    for part in parts:
        ratchet, bare = results["ratchet"].get(part, 0), results["bare"].get(part, 0)
        print(f"| {part} | {ratchet:.2f} | {bare:.2f} |")
    for name in results:
        busy = sum(v for k, v in results[name].items() if k != "idle (epoll)")
        print(f"\n{name}: busy {busy:.2f} ms per turn")


if __name__ == "__main__":
    main()
