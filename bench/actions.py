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

With ``--latencies 0.1,6,30`` it measures instead billed actions per turn as the
model call's latency grows: a 10-turn and a 3-turn tool run (``--turns 10,3``;
``--longest 90`` skips a case whose model calls add up to more seconds), each model
call answered by the stub after the given seconds, for Ratchet's defaults, fast
mode, ``heartbeat_timeout=None``, a message to a session (the same turns),
temporalio-openai-agents and pydantic-ai, in ABBA order (each engine's runs split
into a block on the way and one on the way back), into
``results/actions_by_latency.json``. Each case also counts the upserts of
``TemporalChangeVersion`` in the runs' histories (``workflow.patched`` makes them;
the dev server meters them, Temporal Cloud does not bill them). Then,
on the same server: what a live follower (``events()``) costs per minute of a run
with 6 s model calls and of an idle session, and what an idle session's
re-anchoring timer costs when it fires (a horizon of seconds) and after.

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
from datetime import UTC, datetime, timedelta
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
QUERY = "grpc_QueryWorkflow"
CHANGE_VERSION = "TemporalChangeVersion"
"""The search attribute ``workflow.patched`` upserts: Temporal Cloud bills no action
for it ("Temporal Cloud Actions"), the dev server's metering counts it."""
FOLLOWED_SECONDS = 6.0
"""Model-call seconds of the run a follower follows."""
IDLE_FOLLOWED = 60.0
"""Seconds a follower follows an idle session."""
REANCHOR_HORIZON = timedelta(seconds=10)
UNBEATEN = "ratchet run (heartbeat_timeout=None)"


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


def slow_loop(steps: int, delay: float) -> SlowStub:
    stub = SlowStub.tool_loop(steps, final=integrations.FINAL_OUTPUT)
    assert isinstance(stub, SlowStub)
    stub.delay = delay
    return stub


async def by_latency(
    runs: int, latencies: list[float], turns: list[int], longest: float | None
) -> dict[str, Any]:
    """Actions per turn for each (latency, turns) case, each engine in ABBA blocks;
    then a follower's cost and an idle session's re-anchoring."""
    port = free_port()
    cases: list[dict[str, Any]] = []
    with DevServer.start(ui=False, extra_args=["--metrics-port", str(port)]) as server:
        meter = Meter(port)
        client = await AgentClient.connect(server.address, task_queue="latency")
        for delay in latencies:
            for n in turns:
                if longest is not None and delay * n > longest:
                    continue
                stub = slow_loop(n - 1, delay)
                with stub:
                    rows, exempt = await one_case(meter, client, server.address, stub, n, runs)
                case = {"model_seconds": delay, "turns": n, "engines": rows}
                cases.append({**case, "change_version_upserts": exempt})
                print(json.dumps(cases[-1]), flush=True)
        stub = slow_loop(2, FOLLOWED_SECONDS)
        with stub:
            followers = await follower_cost(meter, client, stub)
        print(json.dumps(followers), flush=True)
        stub = slow_loop(0, 0.0)
        with stub:
            idle = await idle_reanchor(meter, client, stub)
        print(json.dumps(idle), flush=True)
    return {"runs": runs, "cases": cases, "followers": followers, "idle_session": idle}


async def change_versions(temporal: Client, workflow_id: str, run_id: str | None = None) -> int:
    """Upserts of ``TemporalChangeVersion`` alone in a run's history (not billed)."""
    handle = temporal.get_workflow_handle(workflow_id, run_id=run_id)
    found = 0
    async for e in handle.fetch_history_events():
        if e.event_type == EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
            fields = e.upsert_workflow_search_attributes_event_attributes.search_attributes
            found += set(fields.indexed_fields) == {CHANGE_VERSION}
    return found


async def one_case(
    meter: Meter, client: AgentClient, address: str, stub: SlowStub, turns: int, runs: int
) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Each engine's actions per run of one case: blocks A B C, then C B A; and the
    ``TemporalChangeVersion`` upserts among them."""
    url = stub.base_url
    model = OpenAIChatModel("bench", base_url=url, api_key="bench")
    agent = ToolCallingAgent(model, [fetch])
    temporal = client.temporal
    exempt: Counter[str] = Counter()

    async def ratchet(name: str, options: RunOptions | None = None) -> None:
        handle = await client.start_run("pager", "go", options=options)
        await handle.result()
        exempt[name] += await change_versions(temporal, handle.id)

    async def peer(name: str, run: Callable[..., Awaitable[tuple[str, str]]]) -> None:
        exempt[name] += await change_versions(temporal, *await run(address, turns - 1, url))

    fast = RunOptions(fast=True)
    unbeaten = RunOptions(heartbeat_timeout=None)
    engines: dict[str, Callable[[], Awaitable[Any]]] = {
        "ratchet run (defaults)": lambda: ratchet("ratchet run (defaults)"),
        "ratchet run (fast mode)": lambda: ratchet("ratchet run (fast mode)", fast),
        UNBEATEN: lambda: ratchet(UNBEATEN, unbeaten),
        "ratchet session message (defaults)": lambda: message(),
        "temporalio-openai-agents": lambda: peer(
            "temporalio-openai-agents", integrations.run_openai_agents
        ),
        "pydantic-ai": lambda: peer("pydantic-ai", integrations.run_pydantic_ai),
    }
    sums: dict[str, Counter[str]] = {name: Counter() for name in engines}
    half = max(1, runs // 2)
    async with build_worker(client, {"pager": agent}):
        session = await client.start_session("pager")
        delay, stub.delay = stub.delay, 0.0
        await session.send("warm up")  # its first workflow task's markers are not a message's
        stub.delay = delay

        async def message() -> None:
            before = await change_versions(temporal, session.id)
            await session.send("go")
            exempt["ratchet session message (defaults)"] += (
                await change_versions(temporal, session.id) - before
            )

        for name in [*engines, *reversed(engines)]:
            block = await meter.measure(half, engines[name])
            sums[name].update({k: v * half for k, v in block.items()})
        await session.close()
    await model.client.close()
    per_run = {
        name: {k: round(v / (2 * half), 2) for k, v in sorted(counts.items())}
        for name, counts in sums.items()
    }
    return per_run, {name: round(exempt[name] / (2 * half), 2) for name in engines}


async def follower_cost(meter: Meter, client: AgentClient, stub: SlowStub) -> dict[str, Any]:
    """Queries a live follower (``events()``) makes per minute: following a run whose
    3 model calls take FOLLOWED_SECONDS each, and following an idle session."""
    model = OpenAIChatModel("bench", base_url=stub.base_url, api_key="bench")
    async with build_worker(client, {"pager": ToolCallingAgent(model, [fetch])}):
        started: dict[str, float] = {}

        async def followed() -> None:
            started["at"] = time.monotonic()
            handle = await client.start_run("pager", "go")
            async for _ in handle.events():
                pass
            await handle.result()
            started["seconds"] = time.monotonic() - started["at"]

        running = await meter.measure(1, followed)
        unfollowed = await meter.measure(1, lambda: client.run("pager", "go"))
        session = await client.start_session("pager")
        delay, stub.delay = stub.delay, 0.0
        await session.send("warm up")
        stub.delay = delay

        async def idle() -> None:
            async def follow() -> None:
                async for _ in session.events():
                    pass

            task = asyncio.create_task(follow())
            await asyncio.sleep(IDLE_FOLLOWED)  # the window measured, not synchronisation
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

        idle_row = await meter.measure(1, idle)
        await session.close()
    await model.client.close()
    queries = running.get(QUERY, 0) - unfollowed.get(QUERY, 0)
    return {
        "model_seconds": FOLLOWED_SECONDS,
        "run_seconds": round(started["seconds"], 1),
        "running": running,
        "unfollowed": unfollowed,
        "queries_per_minute_running": round(queries * 60 / started["seconds"], 2),
        "idle_seconds": IDLE_FOLLOWED,
        "idle": idle_row,
        "queries_per_minute_idle": round(idle_row.get(QUERY, 0) * 60 / IDLE_FOLLOWED, 2),
    }


async def idle_reanchor(meter: Meter, client: AgentClient, stub: SlowStub) -> dict[str, Any]:
    """An idle session that relies on a closed workflow run: the actions while its
    re-anchoring timer fires and it copies (a horizon of REANCHOR_HORIZON), then in
    as long again once it relies on none."""
    model = OpenAIChatModel("bench", base_url=stub.base_url, api_key="bench")
    options = SessionOptions(horizon=REANCHOR_HORIZON, continue_as_new_after_runs=1)
    async with build_worker(client, {"pager": ToolCallingAgent(model, [fetch])}):
        session = await client.start_session("pager", options=options)
        for text in ("one", "two"):
            await session.send(text)  # the first run closes: the second relies on it
        wait = REANCHOR_HORIZON.total_seconds() * 3

        async def idle() -> None:
            await asyncio.sleep(wait)  # the window measured, not synchronisation

        firing = await meter.measure(1, idle)
        after = await meter.measure(1, idle)
        await session.close()
    await model.client.close()
    return {
        "horizon_seconds": REANCHOR_HORIZON.total_seconds(),
        "window_seconds": wait,
        "while_the_timer_fires": firing,
        "after": after,
    }


def main_by_latency(args: argparse.Namespace) -> None:
    started = time.monotonic()
    latencies = [float(x) for x in args.latencies.split(",")]
    turns = [int(x) for x in args.turns.split(",")]
    results = asyncio.run(by_latency(args.runs, latencies, turns, args.longest))
    results["date"] = datetime.now(UTC).date().isoformat()
    results["seconds"] = round(time.monotonic() - started)
    longest = f" --longest {args.longest:g}" if args.longest is not None else ""
    results["command"] = (
        f"python -m bench.actions --latencies {args.latencies} --turns {args.turns}"
        f"{longest} --runs {args.runs}"
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
    parser.add_argument(
        "--longest", type=float, help="skip cases whose model calls take longer (seconds)"
    )
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
