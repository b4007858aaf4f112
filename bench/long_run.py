"""One agent execution of 10,000 steps, continuing-as-new in the middle of it.

    .venv/bin/python -m bench.long_run [--steps 10000]

The workload of bench.history_growth (a tool returning 2,000 characters, a scripted
model that calls it N times, then answers), run as ONE execution. The working
view of the thread is kept small by compaction (``KeepLastTurns``);
AgentRun continues as new whenever Temporal suggests it, carrying session
and execution (model B), its thread by reference, so the run goes on with its turn
count, usage and thread. Reports the number of
workflow runs in the chain, history per run and in total, and time per turn.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from temporalio.client import WorkflowExecutionStatus

from ratchet.agents import KeepLastTurns, ScriptedModel, ToolCallingAgent, tool
from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.types import views
from ratchet.wire import RunOptions
from ratchet.worker import build_worker

RESULTS = Path(__file__).parent / "results"


@tool
def fetch(page: int) -> str:
    """Fetch a page (2,000 characters)."""
    return "x" * 2000


def by_turn(steps: int) -> ScriptedModel:
    def reply(messages, context):
        if context.turn <= steps:
            return ScriptedModel.call("fetch", page=context.turn - 1)
        return "done"

    return ScriptedModel(reply)


async def measure(steps: int) -> dict:
    with DevServer.start(ui=False) as server:
        client = await AgentClient.connect(server.address, task_queue="long")
        agent = ToolCallingAgent(by_turn(steps), [fetch])
        options = RunOptions(
            max_turns=steps + 5, compaction=KeepLastTurns(max_messages=60, turns=20)
        )
        async with build_worker(client, {"pager": agent}):
            started = time.perf_counter()
            handle = await client.start_run("pager", "Read every page.", options=options)
            result = await handle.result()
            elapsed = time.perf_counter() - started
            state = await handle.record()
        runs = []
        async for execution in client.temporal.list_workflows(f"WorkflowId = '{handle.id}'"):
            described = await client.temporal.get_workflow_handle(
                handle.id, run_id=execution.run_id
            ).describe()
            info = described.raw_description.workflow_execution_info
            runs.append(
                {
                    "status": described.status.name if described.status else "?",
                    "history_bytes": info.history_size_bytes,
                    "events": info.history_length,
                }
            )
    assert result.output == "done", result
    assert state.execution is not None
    return {
        "steps": steps,
        "turns": result.turns,
        "status": result.status.value,
        "workflow_runs": len(runs),
        "continued_as_new": sum(
            r["status"] == WorkflowExecutionStatus.CONTINUED_AS_NEW.name for r in runs
        ),
        "history_bytes_total": sum(r["history_bytes"] for r in runs),
        "history_bytes_largest_run": max(r["history_bytes"] for r in runs),
        "events_largest_run": max(r["events"] for r in runs),
        "execution_id_kept": state.execution.execution_id,
        "thread_messages_at_end": state.session.thread.length,
        "thread_view_at_end": len(
            views.positions(state.session.thread.view, state.session.thread.length)
        ),
        "usage_requests": result.usage.requests,
        "seconds": round(elapsed, 1),
        "ms_per_turn": round(elapsed * 1000 / result.turns, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10_000)
    args = parser.parse_args()
    row = asyncio.run(measure(args.steps))
    print(json.dumps(row, indent=2))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "long_run.json").write_text(json.dumps(row, indent=2) + "\n")


if __name__ == "__main__":
    main()
