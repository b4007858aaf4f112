"""A rerun of recorded sessions against plain runs of the same cases.

    .venv/bin/python -m bench.rerun [--sessions 50] [--sends 4] [--rounds 4]

Records ``--sessions`` sessions of ``--sends`` messages each (every reply calls one
tool), so ``sessions x sends`` cases (200 by default). Then, on one worker and one dev
server, alternating which goes first in each round (ABBA): ``rerun_many`` of every
session (teacher-forced, tool results from the recording) and the same cases as
plain runs (the same conversation up to each message, the tool run for real), both
``--concurrency`` runs at once. Throughput is cases per second; the target is a rerun
at >= 50% of the plain runs' throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

from ratchet.agents import ScriptedModel, ToolCallingAgent, tool
from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.evals.rerun import read_source, rerun_many, split_cases
from ratchet.worker import build_worker

from .sessions import RESULTS
from .web import machine


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    return f"weather in {city}: mild"


def reply(messages, context):
    last = [m for m in messages if m.role == "user"][-1]
    if messages[-1].role != "tool":
        return ScriptedModel.call("lookup", city=last.text.split()[-1])
    return f"{messages[-1].text} (answer {sum(m.role == 'user' for m in messages)})"


AGENTS = {"recorded": ToolCallingAgent(ScriptedModel(reply), [lookup])}
AGENTS["changed"] = ToolCallingAgent(ScriptedModel(reply), [lookup])


async def record(client: AgentClient, sessions: int, sends: int) -> list[str]:
    async def one(n: int) -> str:
        session = await client.start_session("recorded")
        for i in range(sends):
            await session.send(f"Weather in city{n}x{i}")
        await session.close()
        return session.id

    return list(await asyncio.gather(*(one(n) for n in range(sessions))))


async def plain(client: AgentClient, cases: list, concurrency: int) -> float:
    slots = asyncio.Semaphore(concurrency)

    async def one(case) -> None:
        async with slots:
            prompt = [m.model_copy(update={"id": ""}) for m in [*case.before, case.prompt]]
            await client.run("changed", prompt)

    started = time.perf_counter()
    await asyncio.gather(*(one(c) for c in cases))
    return time.perf_counter() - started


async def rerun(client: AgentClient, sources: list[str], concurrency: int) -> float:
    started = time.perf_counter()
    report = await rerun_many(client, sources, agent="changed", concurrency=concurrency)
    assert all(c.new.error is None for c in report.cases)
    return time.perf_counter() - started


async def measure(sessions: int, sends: int, rounds: int, concurrency: int) -> dict:
    with DevServer.start(ui=False) as server:
        client = await AgentClient.connect(server.address, task_queue="bench-rerun")
        async with build_worker(client, AGENTS, max_concurrent_turns=concurrency):
            sources = await record(client, sessions, sends)
            cases = [c for s in sources for c in split_cases(s, await read_source(client, s))]
            await rerun(client, sources[:5], concurrency)  # warm-up
            await plain(client, cases[:20], concurrency)
            a, b, order = [], [], []
            for i in range(rounds):
                first = "rerun" if i % 4 in (0, 3) else "plain"  # ABBA
                order.append(first)
                for name in (first, "plain" if first == "rerun" else "rerun"):
                    if name == "rerun":
                        a.append(await rerun(client, sources, concurrency))
                    else:
                        b.append(await plain(client, cases, concurrency))
    n = len(cases)
    rerun_rate = n / statistics.median(a)
    plain_rate = n / statistics.median(b)
    return {
        "command": (
            f"python -m bench.rerun --sessions {sessions} --sends {sends} "
            f"--rounds {rounds} --concurrency {concurrency}"
        ),
        "machine": machine(),
        "cases": n,
        "rounds": rounds,
        "first_in_round": order,
        "rerun_s": [round(x, 2) for x in a],
        "plain_s": [round(x, 2) for x in b],
        "rerun_cases_per_s": round(rerun_rate, 1),
        "plain_cases_per_s": round(plain_rate, 1),
        "ratio": round(rerun_rate / plain_rate, 2),
        "target_ratio": 0.5,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--sends", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=20)
    args = parser.parse_args()
    report = asyncio.run(measure(args.sessions, args.sends, args.rounds, args.concurrency))
    (RESULTS / "rerun.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
