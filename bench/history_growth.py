"""How much Temporal history an agent run writes, as the conversation grows.

    .venv/bin/python -m bench.history_growth [--steps 10 25 50 100]

Workload (issue 3): one agent, one tool returning 2,000 characters, a scripted
model that calls it N times and then answers. For each N it prints the history
bytes and events the server reports, and the ratio history bytes ÷ message bytes,
for Ratchet and for a bare temporalio loop that passes the whole thread to every
activity (the naive pattern), side by side on one dev server in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker

from ratchet.agents import ScriptedModel, ToolCallingAgent, tool
from ratchet.devserver import DevServer
from ratchet.worker import build_worker
from ratchet.workflows import AgentClient, RunOptions

TOOL_RESULT = "x" * 2000
RESULTS = Path(__file__).parent / "results"


@tool
def fetch(page: int) -> str:
    """Fetch a page (2,000 characters)."""
    return TOOL_RESULT


def script(steps: int) -> ScriptedModel:
    return ScriptedModel([*(ScriptedModel.call("fetch", page=i) for i in range(steps)), "done"])


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


async def history_of(client: Client, workflow_id: str) -> tuple[int, int]:
    info = (await client.get_workflow_handle(workflow_id).describe()).raw_description
    return (
        info.workflow_execution_info.history_size_bytes,
        info.workflow_execution_info.history_length,
    )


async def measure(steps_list: list[int]) -> list[dict]:
    rows = []
    with DevServer.start(ui=False) as server:
        client = await AgentClient.connect(server.address, task_queue="bench")
        for steps in steps_list:
            rows += await measure_one(client, steps)
    return rows


async def measure_one(client: AgentClient, steps: int) -> list[dict]:
    agents = {"pager": ToolCallingAgent(script(steps), [fetch])}
    naive_queue = f"naive-{uuid.uuid4().hex[:6]}"
    rows = []
    async with (
        build_worker(client, agents),
        Worker(
            client.temporal, task_queue=naive_queue, workflows=[NaiveLoop], activities=[naive_turn]
        ),
    ):
        started = time.perf_counter()
        handle = await client.start_run("pager", "go", options=RunOptions(max_turns=steps + 5))
        await handle.result()
        elapsed = time.perf_counter() - started
        state = await handle.state()
        message_bytes = sum(len(m.model_dump_json()) for m in state.session.thread.messages)
        size, events = await history_of(client.temporal, handle.id)
        rows.append(row("ratchet (inline thread)", steps, size, events, message_bytes, elapsed))

        started = time.perf_counter()
        naive_id = f"naive-{uuid.uuid4().hex[:8]}"
        await client.temporal.execute_workflow(
            NaiveLoop.run, steps, id=naive_id, task_queue=naive_queue
        )
        elapsed = time.perf_counter() - started
        size, events = await history_of(client.temporal, naive_id)
        rows.append(
            row("bare temporalio loop (naive)", steps, size, events, message_bytes, elapsed)
        )
    return rows


def row(
    engine: str, steps: int, size: int, events: int, message_bytes: int, elapsed: float
) -> dict:
    return {
        "engine": engine,
        "steps": steps,
        "history_bytes": size,
        "events": events,
        "message_bytes": message_bytes,
        "ratio": round(size / message_bytes, 2),
        "ms_per_turn": round(elapsed * 1000 / (steps + 1), 1),
    }


def markdown(rows: list[dict]) -> str:
    lines = [
        "| engine | N | history bytes | events | message bytes | history ÷ messages | ms/turn |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['engine']} | {r['steps']} | {r['history_bytes']:,} | {r['events']} | "
            f"{r['message_bytes']:,} | {r['ratio']} | {r['ms_per_turn']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, nargs="+", default=[10, 25, 50])
    args = parser.parse_args()
    rows = asyncio.run(measure(args.steps))
    print(markdown(rows))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "history_growth.json").write_text(json.dumps(rows, indent=2))
    (RESULTS / "history_growth.md").write_text(markdown(rows) + "\n")


if __name__ == "__main__":
    main()
