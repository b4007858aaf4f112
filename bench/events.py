"""What live events cost and how fast they arrive.

    python -m bench.events          (writes results/events.json)

Workload: an agent whose one turn emits E events, one every 50 ms (a stand-in for
a streaming model), then answers; plus a 3-turn tool-calling run. Side by side on
one dev server: workers with live events off and on, and with a watcher following
the run. Reported: history events and bytes per run, and for the watched run the
delay from ``context.emit`` in the activity to the watcher receiving the event.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
import uuid
from datetime import timedelta
from pathlib import Path

from ratchet.agents import Agent, Result, RunContext, ScriptedModel, Thread, ToolCallingAgent, tool
from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.types import Message
from ratchet.worker import build_worker

RESULTS = Path(__file__).parent / "results" / "events.json"
EMITS = 40
ROUNDS = 3


class Ticker(Agent):
    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        for i in range(EMITS):
            await context.emit({"i": i, "sent": time.time()})
            await asyncio.sleep(0.05)
        answer = Message.assistant("ticked")
        await thread.on_new_messages([answer])
        return Result(final_response=answer)


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key} " * 20


def tools_agent() -> Agent:
    calls = [ScriptedModel.call("lookup", key=f"k{i}") for i in range(3)]
    return ToolCallingAgent(ScriptedModel([*calls, "done"]), tools=[lookup])


async def history(handle) -> tuple[int, int]:
    info = (await handle.workflow.describe()).raw_description.workflow_execution_info
    return info.history_length, info.history_size_bytes


async def one(client: AgentClient, agent: str, *, watch: bool) -> dict:
    handle = await client.start_run(agent, "go")
    delays: list[float] = []
    if watch:
        async for event in handle.events():
            if event.kind == "custom":
                delays.append(time.time() - event.data["sent"])
    await handle.result()
    length, size = await history(handle)
    return {"events": length, "bytes": size, "delays": delays}


async def main() -> None:
    rows: dict[str, list[dict]] = {}
    with DevServer.start(ui=False) as server:
        base = await AgentClient.connect(server.address)
        agents = {"ticker": Ticker(), "tools": tools_agent()}
        setups = {  # name: (batch interval, watched)
            "off": (None, False),
            "on, 250 ms batches, unwatched": (timedelta(milliseconds=250), False),
            "on, 250 ms batches, watched": (timedelta(milliseconds=250), True),
            "on, 1 s batches, watched": (timedelta(seconds=1), True),
        }
        for _ in range(ROUNDS):
            for name, (interval, watch) in setups.items():
                client = AgentClient(base.temporal, task_queue=f"bench-{uuid.uuid4().hex[:6]}")
                async with build_worker(client, agents, live_events=interval):
                    for agent in agents:
                        row = await one(client, agent, watch=watch and agent == "ticker")
                        rows.setdefault(f"{agent} · {name}", []).append(row)
    summary = {}
    for key, runs in rows.items():
        delays = sorted(d for r in runs for d in r["delays"])
        summary[key] = {
            "history_events": statistics.median(r["events"] for r in runs),
            "history_bytes": statistics.median(r["bytes"] for r in runs),
            **(
                {
                    "delay_ms_median": round(1000 * statistics.median(delays)),
                    "delay_ms_p95": round(1000 * delays[int(0.95 * (len(delays) - 1))]),
                    "received": f"{len(delays)}/{EMITS * len(runs)}",
                }
                if delays
                else {}
            ),
        }
    RESULTS.write_text(json.dumps({"emits_per_turn": EMITS, "rounds": ROUNDS, **summary}, indent=2))
    for key, value in summary.items():
        print(f"{key:32} {value}")


if __name__ == "__main__":
    asyncio.run(main())
