"""How much Temporal history an agent run writes, as the conversation grows.

    .venv/bin/pip install -e '.[dev,bench]'
    .venv/bin/python -m bench.history_growth [--steps 10 25 50 100 500]

Workload (issue 3): one agent, one tool returning 2,000 characters, a model that
calls it N times and then answers. The model is a local OpenAI-compatible HTTP
server (``ratchet.testing.OpenAIServer.tool_loop``) for every engine that calls a
model, so all of them pay for the same HTTP round trips. Engines, on one dev server in one run:

- ratchet, threads by reference (each turn names log positions; every message is
  written to history once)
- ratchet, fast mode (local activities)
- a bare temporalio loop that passes the whole thread to each activity (naive)
- temporalio-openai-agents (OpenAIAgentsPlugin) and pydantic-ai (TemporalDurability),
  when installed (the ``bench`` extra), with their turn/request limits above N.

For each: the history bytes and events the server reports, the run's status (the
server terminates a workflow whose history passes 50 MB), milliseconds per turn,
and history bytes ÷ message bytes, where message bytes is the JSON size of the
conversation's messages (from Ratchet's thread of the same workload). A run that
continued as new counts the history of every run in its chain.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import time
import uuid
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker

from ratchet.agents import OpenAIChatModel, ToolCallingAgent, tool
from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.testing import OpenAIServer
from ratchet.wire import RunOptions
from ratchet.worker import build_worker

from . import integrations

TOOL_RESULT = "x" * 2000
RESULTS = Path(__file__).parent / "results"
HISTORY_LIMIT = 50 * 1024 * 1024

RATCHET_ENGINES = {
    "ratchet, threads by reference": RunOptions(),
    "ratchet, fast mode (local activities)": RunOptions(fast=True),
}


@tool
def fetch(page: int) -> str:
    """Fetch a page (2,000 characters)."""
    return TOOL_RESULT


@activity.defn(name="naive.turn")
async def naive_turn(thread: list[dict]) -> list[dict]:
    """The naive pattern: the whole thread in, the new messages out."""
    turn = sum(m["role"] == "assistant" for m in thread)
    steps = int(thread[0]["content"])
    if turn >= steps:
        return [{"role": "assistant", "content": "done"}]
    call = {"id": f"call_{turn}", "name": "fetch", "arguments": json.dumps({"page": turn})}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "content": TOOL_RESULT, "tool_call_id": call["id"]},
    ]


@workflow.defn(name="NaiveLoop", sandboxed=False)  # a baseline; no sandbox needed
class NaiveLoop:
    @workflow.run
    async def run(self, steps: int) -> int:
        thread: list[dict] = [{"role": "user", "content": str(steps)}]
        while thread[-1].get("content") != "done":
            thread += await workflow.execute_activity(
                naive_turn, thread, start_to_close_timeout=timedelta(minutes=1)
            )
        return len(thread)


async def described(client: Client, workflow_id: str, run_id: str | None = None) -> dict:
    """History of the whole chain of runs under ``workflow_id`` (continue-as-new
    starts a new run: its bytes count too), and the last run's status."""
    runs = [w async for w in client.list_workflows(f"WorkflowId = '{workflow_id}'")]
    total = {"history_bytes": 0, "events": 0, "runs": len(runs)}
    for run in runs:
        description = await client.get_workflow_handle(workflow_id, run_id=run.run_id).describe()
        info = description.raw_description.workflow_execution_info
        total["history_bytes"] += info.history_size_bytes
        total["events"] += info.history_length
    latest = await client.get_workflow_handle(workflow_id, run_id=run_id).describe()
    if run_id is None or latest.status is None:
        latest = await client.get_workflow_handle(workflow_id).describe()
    total["status"] = latest.status.name if latest.status else "?"
    return total


async def measure(steps_list: list[int], integrations_too: bool) -> list[dict]:
    rows: list[dict] = []
    with DevServer.start(ui=False) as server:
        client = await AgentClient.connect(server.address, task_queue="bench")
        await measure_one(client, server.address, 2, False)  # warm-up, not recorded
        for steps in steps_list:
            rows += await measure_one(client, server.address, steps, integrations_too)
            print(markdown([r for r in rows if r["steps"] == steps]), flush=True)
    return rows


async def measure_one(
    client: AgentClient, address: str, steps: int, integrations_too: bool
) -> list[dict]:
    rows: list[dict] = []
    message_bytes = 0
    with OpenAIServer.tool_loop(steps) as stub:
        model = OpenAIChatModel("bench", base_url=stub.base_url, api_key="bench")
        agents = {"pager": ToolCallingAgent(model, [fetch])}
        async with build_worker(client, agents):
            for engine, options in RATCHET_ENGINES.items():
                options = options.model_copy(update={"max_turns": steps + 5})
                started = time.perf_counter()
                handle = await client.start_run("pager", "go", options=options)
                try:
                    await handle.result()
                    if not message_bytes:
                        state = await handle.record()
                        messages = state.session.thread.messages
                        message_bytes = sum(len(m.model_dump_json()) for m in messages)
                except Exception as e:  # e.g. terminated at the history limit
                    print(f"{engine} N={steps}: {type(e).__name__}: {e}", flush=True)
                elapsed = time.perf_counter() - started
                rows.append(
                    {
                        "engine": engine,
                        "steps": steps,
                        **await described(client.temporal, handle.id),
                        "seconds": elapsed,
                    }
                )
        await model.client.close()

    naive_queue = f"naive-{uuid.uuid4().hex[:6]}"
    async with Worker(
        client.temporal, task_queue=naive_queue, workflows=[NaiveLoop], activities=[naive_turn]
    ):
        started = time.perf_counter()
        naive_id = f"naive-{uuid.uuid4().hex[:8]}"
        try:
            await client.temporal.execute_workflow(
                NaiveLoop.run, steps, id=naive_id, task_queue=naive_queue
            )
        except Exception as e:
            print(f"naive N={steps}: {type(e).__name__}: {e}", flush=True)
        rows.append(
            {
                "engine": "bare temporalio loop, thread passed (naive)",
                "steps": steps,
                **await described(client.temporal, naive_id),
                "seconds": time.perf_counter() - started,
            }
        )

    if integrations_too:
        for engine, run in [
            ("temporalio-openai-agents (OpenAIAgentsPlugin)", integrations.run_openai_agents),
            ("pydantic-ai (TemporalDurability)", integrations.run_pydantic_ai),
        ]:
            with OpenAIServer.tool_loop(steps) as stub:
                started = time.perf_counter()
                try:
                    workflow_id, run_id = await run(address, steps, stub.base_url)
                except integrations.IntegrationRunFailed as e:
                    print(f"{engine} N={steps}: {e}", flush=True)
                    workflow_id, run_id = e.workflow_id, e.run_id
                except RuntimeError as e:  # not installed
                    print(f"{engine}: skipped: {e}", flush=True)
                    continue
                rows.append(
                    {
                        "engine": engine,
                        "steps": steps,
                        **await described(client.temporal, workflow_id, run_id),
                        "seconds": time.perf_counter() - started,
                    }
                )

    for row in rows:
        row["message_bytes"] = message_bytes
        row["ratio"] = round(row["history_bytes"] / message_bytes, 2)
        row["ms_per_turn"] = round(row.pop("seconds") * 1000 / (steps + 1), 1)
    return rows


def markdown(rows: list[dict]) -> str:
    lines = [
        "| engine | N | status | runs | history bytes | events | history ÷ messages | ms/turn |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        status = "completed" if r["status"] == "COMPLETED" else f"**{r['status'].lower()}**"
        lines.append(
            f"| {r['engine']} | {r['steps']} | {status} | {r['runs']} | {r['history_bytes']:,} | "
            f"{r['events']:,} | {r['ratio']} | {r['ms_per_turn']} |"
        )
    return "\n".join(lines)


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (sizes, ratios) = plt.subplots(1, 2, figsize=(13, 5))
    for engine in dict.fromkeys(r["engine"] for r in rows):
        mine = [r for r in rows if r["engine"] == engine]
        steps = [r["steps"] for r in mine]
        style = "-o" if engine.startswith("ratchet") else "--s"
        sizes.plot(steps, [r["history_bytes"] / 1e6 for r in mine], style, label=engine)
        ratios.plot(steps, [r["ratio"] for r in mine], style, label=engine)
        for r in mine:
            if r["status"] != "COMPLETED":
                sizes.annotate(r["status"].lower(), (r["steps"], r["history_bytes"] / 1e6))
    sizes.axhline(HISTORY_LIMIT / 1e6, color="red", linewidth=1)
    sizes.text(
        10, HISTORY_LIMIT / 1e6 * 1.1, "Temporal terminates a workflow at 50 MB", color="red"
    )
    ratios.axhline(1.5, color="green", linewidth=1)
    ratios.text(10, 1.6, "target 1.5", color="green")
    for axis, label in [(sizes, "history MB"), (ratios, "history bytes ÷ message bytes")]:
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("tool steps N (2,000-character tool result each)")
        axis.set_ylabel(label)
        axis.grid(True, which="both", alpha=0.3)
    sizes.legend(fontsize=8)
    fig.suptitle("Temporal history written by one agent run (one dev server, one run)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, nargs="+", default=[10, 25, 50, 100, 500])
    parser.add_argument(
        "--no-integrations", action="store_true", help="skip openai-agents and pydantic-ai"
    )
    parser.add_argument("--out", default="history_growth")
    args = parser.parse_args()
    logging.getLogger("temporalio").setLevel(logging.ERROR)
    rows = asyncio.run(measure(args.steps, not args.no_integrations))
    print(markdown(rows))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(rows, indent=2) + "\n")
    (RESULTS / f"{args.out}.md").write_text(markdown(rows) + "\n")
    try:
        plot(rows, RESULTS / f"{args.out}.png")
    except ModuleNotFoundError as e:  # the bench extra brings matplotlib
        print(f"no plot: {e} (pip install -e '.[bench]')")


if __name__ == "__main__":
    main()
