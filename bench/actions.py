"""What a message costs in Temporal Cloud actions, Ratchet beside its peers.

    .venv/bin/python -m bench.actions [--runs 10]

Temporal Cloud bills actions: starting a workflow, scheduling an activity, each
recorded heartbeat, a timer, a signal, a query, an Update, a search-attribute
upsert, a local activity... The dev server counts them as its metering does, in
the ``action`` metric by ``action_type`` (``temporal server start-dev
--metrics-port P``); this script reads it around each workload and divides by the
number of runs. It estimates the bill; it is not the bill.

Workload: one model call that asks for one tool, the tool, the model's final
answer (two model calls). No streaming, no follower; every engine calls the same
local OpenAI-compatible stub (``OpenAIServer.tool_loop(1)``). Engines: Ratchet's
defaults (a run; and a message to a session), fast mode, temporalio-openai-agents
and pydantic-ai (``bench.integrations``). Then what a live follower
(``events()``), streaming (``OpenAIChatModel(stream=True)``: the text as live
events) and an approval that waits add to a Ratchet run.

With ``--latencies 0.1,6`` it measures instead billed actions per turn as the model
call's latency grows: a 10-turn and a 3-turn tool run (``--turns 10,3``), each model
call answered by the stub after the given seconds, for Ratchet's defaults,
temporalio-openai-agents and pydantic-ai, in ABBA order (each engine's runs split
into a block on the way and one on the way back), into
``results/actions_by_latency.json``.

A cross-check: the billable events in one run's history (workflow started,
activities and local-activity markers, timers, signals, Updates, upserts, child
workflows) beside the metric's count less heartbeats and queries.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
import urllib.request
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from ratchet.agents import OpenAIChatModel, ToolCallingAgent, tool
from ratchet.client import AgentClient
from ratchet.devserver import DevServer, free_port
from ratchet.testing import OpenAIServer
from ratchet.wire import RunOptions, SessionOptions
from ratchet.worker import build_worker

from . import integrations

RESULTS = Path(__file__).parent / "results" / "actions.json"
RESULTS_BY_LATENCY = Path(__file__).parent / "results" / "actions_by_latency.json"
LINE = re.compile(r'^action\{action_type="([^"]+)",namespace="default"[^}]*\} (\S+)$')
BILLABLE = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED: "workflow started",
    EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: "activity",
    EventType.EVENT_TYPE_MARKER_RECORDED: "marker (local activity, patch)",
    EventType.EVENT_TYPE_TIMER_STARTED: "timer",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED: "signal",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED: "update",
    EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: "search-attribute upsert",
    EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED: "child workflow",
}
"""History events that are actions (heartbeats and queries leave none)."""
NOT_IN_HISTORY = ("grpc_RecordActivityTaskHeartbeat", "grpc_QueryWorkflow")


@tool
def fetch(page: int) -> str:
    """Fetch a page (2,000 characters)."""
    return integrations.TOOL_RESULT


@tool(name="fetch", requires_approval=True)
def fetch_approved(page: int) -> str:
    """Fetch a page (2,000 characters), once a person approved."""
    return integrations.TOOL_RESULT


class Meter:
    """The dev server's ``action`` counter, namespace ``default``, by action type."""

    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}/metrics"

    def read(self) -> Counter[str]:
        text = urllib.request.urlopen(self.url, timeout=10).read().decode()
        counts: Counter[str] = Counter()
        for line in text.splitlines():
            if match := LINE.match(line):
                counts[match[1]] += int(float(match[2]))
        return counts

    async def settled(self) -> Counter[str]:
        """The counts once they stop moving (the server reports them each second)."""
        last = self.read()
        while True:
            await asyncio.sleep(1.5)
            now = self.read()
            if now == last:
                return now
            last = now

    async def measure(self, runs: int, work: Callable[[], Awaitable[Any]]) -> dict[str, float]:
        before = await self.settled()
        for _ in range(runs):
            await work()
        after = await self.settled()
        delta = {k: (after[k] - before[k]) / runs for k in after if after[k] != before[k]}
        return dict(sorted(delta.items()))


async def billable(temporal: Client, workflow_id: str, run_id: str | None = None) -> int:
    """The billable events in the history of a run (and the runs it continued as)."""
    handle = temporal.get_workflow_handle(workflow_id, run_id=run_id)
    return len([e async for e in handle.fetch_history_events() if e.event_type in BILLABLE])


async def measure(runs: int) -> dict[str, Any]:
    port = free_port()
    results: dict[str, Any] = {"runs": runs, "engines": {}, "extras": {}, "history_check": {}}
    with DevServer.start(ui=False, extra_args=["--metrics-port", str(port)]) as server:
        meter = Meter(port)
        client = await AgentClient.connect(server.address, task_queue="actions")
        engines, extras, check = results["engines"], results["extras"], results["history_check"]
        with OpenAIServer.tool_loop(1, final="the report is written and filed") as stub:
            model = OpenAIChatModel("bench", base_url=stub.base_url, api_key="bench")
            streaming = OpenAIChatModel(
                "bench", base_url=stub.base_url, api_key="bench", stream=True
            )
            agents = {
                "pager": ToolCallingAgent(model, [fetch]),
                "streamer": ToolCallingAgent(streaming, [fetch]),
                "careful": ToolCallingAgent(model, [fetch_approved]),
            }
            async with build_worker(client, agents):
                await client.run("pager", "go")  # warm-up
                last: dict[str, str] = {}

                async def run(agent: str = "pager", options: RunOptions | None = None) -> None:
                    handle = await client.start_run(agent, "go", options=options)
                    await handle.result()
                    last["id"] = handle.id

                engines["ratchet run (defaults)"] = await meter.measure(runs, run)
                check["ratchet run (defaults)"] = await billable(client.temporal, last["id"])
                fast = RunOptions(fast=True)
                engines["ratchet run (fast mode)"] = await meter.measure(
                    runs, lambda: run(options=fast)
                )
                check["ratchet run (fast mode)"] = await billable(client.temporal, last["id"])

                session = await client.start_session("pager", options=SessionOptions())
                await session.send("go")
                engines["ratchet session message (defaults)"] = await meter.measure(
                    runs, lambda: session.send("go")
                )
                await session.close()

                async def followed() -> None:
                    handle = await client.start_run("pager", "go")
                    async for _ in handle.events():
                        pass
                    await handle.result()

                extras["live follower (events())"] = await meter.measure(runs, followed)
                extras["streaming (stream=True)"] = await meter.measure(
                    runs, lambda: run("streamer")
                )

                async def approved() -> None:
                    handle = await client.start_run("careful", "go")
                    [pending] = await handle.wait_for_pending()
                    await handle.approve(pending.action.id)
                    await handle.result()

                extras["an approval that waits"] = await meter.measure(runs, approved)
            await model.client.close()
            await streaming.client.close()

        for engine, run_peer in [
            ("temporalio-openai-agents (OpenAIAgentsPlugin)", integrations.run_openai_agents),
            ("pydantic-ai (TemporalDurability)", integrations.run_pydantic_ai),
        ]:
            with OpenAIServer.tool_loop(1, final=integrations.FINAL_OUTPUT) as stub:
                ids: dict[str, tuple[str, str]] = {}

                async def peer(run_peer=run_peer, ids=ids, url=stub.base_url) -> None:
                    ids["last"] = await run_peer(server.address, 1, url)

                try:
                    engines[engine] = await meter.measure(runs, peer)
                except RuntimeError as e:  # not installed
                    print(f"{engine}: skipped: {e}", flush=True)
                    continue
                check[engine] = await billable(client.temporal, *ids["last"])
    return results


class SlowStub(OpenAIServer):
    """``OpenAIServer.tool_loop`` whose every reply takes ``delay`` seconds (each
    request has a thread of its own)."""

    delay = 0.0

    def _answer(self, request: Any) -> Any:
        time.sleep(self.delay)  # the model call's latency
        return super()._answer(request)


def slow_loop(steps: int, delay: float) -> OpenAIServer:
    stub = SlowStub.tool_loop(steps, final=integrations.FINAL_OUTPUT)
    assert isinstance(stub, SlowStub)
    stub.delay = delay
    return stub


async def by_latency(runs: int, latencies: list[float], turns: list[int]) -> dict[str, Any]:
    """Actions per turn for each (latency, turns) case, each engine in ABBA blocks."""
    port = free_port()
    cases: list[dict[str, Any]] = []
    with DevServer.start(ui=False, extra_args=["--metrics-port", str(port)]) as server:
        meter = Meter(port)
        client = await AgentClient.connect(server.address, task_queue="latency")
        for delay in latencies:
            for n in turns:
                with slow_loop(n - 1, delay) as stub:
                    rows = await one_case(meter, client, server.address, stub.base_url, n, runs)
                cases.append({"model_seconds": delay, "turns": n, "engines": rows})
                print(json.dumps(cases[-1]), flush=True)
    return {"runs": runs, "cases": cases}


async def one_case(
    meter: Meter, client: AgentClient, address: str, url: str, turns: int, runs: int
) -> dict[str, dict[str, float]]:
    """Each engine's actions per run of one case: blocks A B C, then C B A."""
    model = OpenAIChatModel("bench", base_url=url, api_key="bench")
    agent = ToolCallingAgent(model, [fetch])

    async def ratchet() -> None:
        await client.run("pager", "go")

    engines: dict[str, Callable[[], Awaitable[Any]]] = {
        "ratchet run (defaults)": ratchet,
        "temporalio-openai-agents": lambda: integrations.run_openai_agents(address, turns - 1, url),
        "pydantic-ai": lambda: integrations.run_pydantic_ai(address, turns - 1, url),
    }
    sums: dict[str, Counter[str]] = {name: Counter() for name in engines}
    half = max(1, runs // 2)
    async with build_worker(client, {"pager": agent}):
        for name in [*engines, *reversed(engines)]:
            block = await meter.measure(half, engines[name])
            sums[name].update({k: v * half for k, v in block.items()})
    await model.client.close()
    return {
        name: {k: round(v / (2 * half), 2) for k, v in sorted(counts.items())}
        for name, counts in sums.items()
    }


def main_by_latency(args: argparse.Namespace) -> None:
    started = time.monotonic()
    latencies = [float(x) for x in args.latencies.split(",")]
    turns = [int(x) for x in args.turns.split(",")]
    results = asyncio.run(by_latency(args.runs, latencies, turns))
    results["date"] = datetime.now(UTC).date().isoformat()
    results["seconds"] = round(time.monotonic() - started)
    results["command"] = (
        f"python -m bench.actions --latencies {args.latencies} --turns {args.turns} "
        f"--runs {args.runs}"
    ) + (f" --out {args.out}" if args.out != RESULTS_BY_LATENCY else "")
    for case in results["cases"]:
        for name, row in case["engines"].items():
            per_turn = totals(row) / case["turns"]
            print(
                f"{case['model_seconds']:5} s {case['turns']:3} turns {per_turn:5.2f}/turn {name}"
            )
    args.out.write_text(json.dumps(results, indent=2) + "\n")


def totals(row: dict[str, float]) -> float:
    return round(sum(row.values()), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--latencies", help="model-call seconds, e.g. 0.1,6: per-turn mode")
    parser.add_argument("--turns", default="10,3", help="turns per run (per-turn mode)")
    parser.add_argument("--out", type=Path, default=RESULTS_BY_LATENCY, help="per-turn mode")
    args = parser.parse_args()
    if args.latencies:
        main_by_latency(args)
        return
    started = time.monotonic()
    results = asyncio.run(measure(args.runs))
    results["date"] = datetime.now(UTC).date().isoformat()
    results["seconds"] = round(time.monotonic() - started)
    for group in ("engines", "extras"):
        for name, row in results[group].items():
            print(f"{totals(row):6.2f}  {name}: {row}")
    for name, count in results["history_check"].items():
        metered = results["engines"][name]
        in_history = totals({k: v for k, v in metered.items() if k not in NOT_IN_HISTORY})
        print(f"history check, {name}: {count} billable events in one run, metered {in_history}")
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
