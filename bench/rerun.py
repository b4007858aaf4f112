"""A rerun of recorded sessions against plain runs of the same cases.

    .venv/bin/python -m bench.rerun [--sessions 50] [--sends 4] [--rounds 4]

Records ``--sessions`` sessions of ``--sends`` messages each (every reply calls one
tool), so ``sessions x sends`` cases (200 by default), and exports them as a dataset.
Then, on one worker and one dev server, four ways, the order reversed every other
round (ABCD DCBA): a durable batch (``start_batch``: a RerunBatch workflow, each case a
child run on a reference into the source's log, then its report), the dataset's
snapshots as durable batches (``start_rerun``: conversations inline, no source
read), ``rerun_many`` of every session from this process
(teacher-forced, tool results from the recording), and the same cases as plain runs
(the same conversation up to each message, the tool run for real), all
``--concurrency`` runs at once. Throughput is cases per second, report included; the
target is a rerun at >= 50% of the plain runs' throughput.
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
from ratchet.evals import EvalsPlugin, Snapshot, export_dataset
from ratchet.evals._batch import start_batch, start_rerun
from ratchet.evals._rerun import read_source, rerun_many, split_cases
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


async def batch(client: AgentClient, sources: list[str], concurrency: int) -> float:
    started = time.perf_counter()
    running = await start_batch(client, sources, agent="changed", concurrency=concurrency)
    report = await running.report()
    assert all(c.new.error is None for c in report.cases)
    return time.perf_counter() - started


async def dataset(client: AgentClient, snapshots: list[Snapshot], concurrency: int) -> float:
    started = time.perf_counter()
    running = await start_rerun(client, snapshots, agent="changed", concurrency=concurrency)
    report = await running.report()
    assert all(c.new.error is None for c in report.cases)
    return time.perf_counter() - started


async def measure(sessions: int, sends: int, rounds: int, concurrency: int) -> dict:
    with DevServer.start(ui=False) as server:
        client = await AgentClient.connect(server.address, task_queue="bench-rerun")
        async with build_worker(
            client, AGENTS, max_concurrent_turns=concurrency, plugins=[EvalsPlugin()]
        ):
            sources = await record(client, sessions, sends)
            cases = [c for s in sources for c in split_cases(s, await read_source(client, s))]
            snapshots = (await export_dataset(client, sources)).snapshots
            await rerun(client, sources[:5], concurrency)  # warm-up
            await batch(client, sources[:5], concurrency)
            await dataset(client, snapshots[:5], concurrency)
            await plain(client, cases[:20], concurrency)
            engines = {"batch": batch, "dataset": dataset, "rerun": rerun, "plain": plain}
            work = {"batch": sources, "dataset": snapshots, "rerun": sources, "plain": cases}
            times: dict[str, list[float]] = {name: [] for name in engines}
            orders = []
            for i in range(rounds):
                order = list(engines) if i % 2 == 0 else list(reversed(engines))
                orders.append(order)
                for name in order:
                    times[name].append(await engines[name](client, work[name], concurrency))
    n = len(cases)
    rate = {name: n / statistics.median(t) for name, t in times.items()}
    return {
        "command": (
            f"python -m bench.rerun --sessions {sessions} --sends {sends} "
            f"--rounds {rounds} --concurrency {concurrency}"
        ),
        "machine": machine(),
        "cases": n,
        "rounds": rounds,
        "order_in_round": orders,
        "batch_s": [round(x, 2) for x in times["batch"]],
        "dataset_s": [round(x, 2) for x in times["dataset"]],
        "rerun_s": [round(x, 2) for x in times["rerun"]],
        "plain_s": [round(x, 2) for x in times["plain"]],
        "batch_cases_per_s": round(rate["batch"], 1),
        "dataset_cases_per_s": round(rate["dataset"], 1),
        "rerun_cases_per_s": round(rate["rerun"], 1),
        "plain_cases_per_s": round(rate["plain"], 1),
        "batch_ratio": round(rate["batch"] / rate["plain"], 2),
        "dataset_ratio": round(rate["dataset"] / rate["plain"], 2),
        "ratio": round(rate["rerun"] / rate["plain"], 2),
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
