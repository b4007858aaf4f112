"""A fleet sharing a rate-limited model provider: fair shares, no failed sends.

    .venv/bin/python -m bench.fleet [--rate 10] [--limit 9] [--messages 4]

One dev server (fairness on, as ``ratchet.devserver`` starts it), two worker
processes (``python -m ratchet.worker --agents bench.fleet:AGENTS``) and
``OpenAIServer`` limited to ``--rate`` requests a second (a token bucket of one
second's worth; 429 with ``retry-after`` beyond it), all on this machine. A turn is
one model call with a two-letter answer.

200 sessions from 5 tenants: ``noisy`` has 10 times the sessions of each quiet
tenant (144 against 14), so it sends 10 times as many messages; each session sends
``--messages`` messages one after the other. Each session is started with an owner
(a user of its tenant) and ``tenant=``, and ``RunOptions(fairness_key=tenant)``:
the fair share is the tenant's, not each user's (docs/fleet.md). ``quiet-1`` has
weight 2, the others 1. Three cases, each on a fresh queue:

- ``limited``: ``ratchet fleet limit --rps LIMIT`` on the queue, workers with
  ``--rate-limited``;
- ``unlimited``: no queue limit, workers as started by default;
- ``quiet_only``: the quiet tenants alone, limited: their time to answer without the
  noisy tenant.

The server runs each task queue in one partition (``--partitions``): a provider's
queue at tens of turns a second needs no more, and each partition shares out its
own backlog, so with Temporal's default four a tenant with few turns waiting has
none in some partitions and gets less than its share. ``limited_4_partitions``
repeats ``limited`` on a server with four, to show it.

"Backlogged": a tenant with 2 or more messages sent and not yet answered; the
shares count the turns answered while every tenant was (at the stub, in this
process's clock), against each one's weight / the weights' sum.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ratchet.agents import Agent, OpenAIChatModel, ToolCallingAgent
from ratchet.client import AgentClient
from ratchet.devserver import DevServer, env_with_address
from ratchet.process import hard_exit
from ratchet.testing import OpenAIServer, Reply, Request, WorkerProcess, json_reply
from ratchet.wire import RunOptions, SessionOptions

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).parent.parent
NOISY = "noisy"
QUIET = ["quiet-1", "quiet-2", "quiet-3", "quiet-4"]
WEIGHTS = {NOISY: 1.0, "quiet-1": 2.0, "quiet-2": 1.0, "quiet-3": 1.0, "quiet-4": 1.0}
BACKLOGGED = 2
"""Messages sent and not answered: one may be in its model call, one waits."""


def chat_agent() -> Agent:
    """One call to the model server at ``OPENAI_BASE_URL`` (the bench's stub)."""
    return ToolCallingAgent(OpenAIChatModel("gpt-4o-mini"))


AGENTS = {"chat": chat_agent}


@dataclass
class Stub:
    """The provider: ``OpenAIServer`` answering "ok", noting each answered turn's tenant."""

    rate: float
    answered: list[tuple[float, str]] = field(default_factory=list[tuple[float, str]])

    def answer(self, request: Request) -> Reply:
        text = request.body["messages"][-1]["content"]
        self.answered.append((time.monotonic(), text.split()[0]))
        message = {"role": "assistant", "content": "ok"}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        usage = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
        body = {"id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time())}
        return json_reply(
            200, {**body, "model": "gpt-4o-mini", "choices": [choice], "usage": usage}
        )

    def server(self) -> OpenAIServer:
        return OpenAIServer(answer=self.answer, record=False, rate_limit=self.rate)


@dataclass
class Load:
    """What the client saw: each send's tenant, start and end, failures, and each
    tenant's sends outstanding over time."""

    sends: list[tuple[str, float, float]] = field(default_factory=list[tuple[str, float, float]])
    failures: list[str] = field(default_factory=list[str])
    outstanding: list[tuple[float, str, int]] = field(default_factory=list[tuple[float, str, int]])


def sessions_per_tenant(total: int, factor: int, tenants: list[str]) -> dict[str, int]:
    quiet = round(total / (len(tenants) - 1 + factor))
    return {t: (total - quiet * (len(tenants) - 1) if t == NOISY else quiet) for t in tenants}


async def drive(client: AgentClient, counts: dict[str, int], messages: int) -> Load:
    load, open_sends = Load(), Counter[str]()
    sessions = []
    for tenant, n in counts.items():
        run = RunOptions(fairness_key=tenant, fairness_weight=WEIGHTS[tenant])
        for i in range(n):
            handle = await client.start_session(
                "chat", owner=f"{tenant}-user-{i}", tenant=tenant, options=SessionOptions(run=run)
            )
            sessions.append((tenant, handle))

    async def one(tenant: str, handle: Any, n: int) -> None:
        for m in range(n):
            started = time.monotonic()
            open_sends[tenant] += 1
            load.outstanding.append((started, tenant, open_sends[tenant]))
            try:
                await handle.send(f"{tenant} {handle.id} {m}")
            except Exception as e:  # counted, reported
                load.failures.append(f"{type(e).__name__}: {e}"[:300])
            ended = time.monotonic()
            open_sends[tenant] -= 1
            load.outstanding.append((ended, tenant, open_sends[tenant]))
            load.sends.append((tenant, started, ended))

    # Each session sends its first message at once: the noisy tenant's first.
    await asyncio.gather(*(one(t, h, messages) for t, h in sessions))
    return load


def backlogged_window(load: Load, tenants: list[str]) -> tuple[float, float] | None:
    """From when every tenant first has BACKLOGGED sends outstanding until the first
    moment one has fewer."""
    now = dict.fromkeys(tenants, 0)
    start = None
    for at, tenant, count in sorted(load.outstanding):
        now[tenant] = count
        every = all(c >= BACKLOGGED for c in now.values())
        if start is None and every:
            start = at
        elif start is not None and not every:
            return start, at
    return None


def shares(stub: Stub, load: Load, tenants: list[str]) -> dict[str, Any]:
    window = backlogged_window(load, tenants)
    if window is None:
        return {"window_s": 0}
    turns = Counter(t for at, t in stub.answered if window[0] <= at < window[1])
    total, weights = sum(turns.values()), sum(WEIGHTS[t] for t in tenants)
    return {
        "window_s": round(window[1] - window[0], 1),
        "turns": total,
        "by_tenant": {
            t: {
                "turns": turns[t],
                "share": round(turns[t] / total, 3),
                "weight_share": round(WEIGHTS[t] / weights, 3),
                "ratio": round(turns[t] / total / (WEIGHTS[t] / weights), 3),
            }
            for t in tenants
        },
    }


def p95(values: list[float]) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


def summary(stub: Stub, server: OpenAIServer, load: Load, tenants: list[str]) -> dict:
    first = server.answers[0].at
    last_ok = max(at for at, _ in stub.answered)
    quiet = [end - start for t, start, end in load.sends if t != NOISY]
    return {
        "tenants": tenants,
        "sends": len(load.sends),
        "failed_sends": len(load.failures),
        "failures": load.failures[:3],
        "model_calls": len(server.answers),
        "answered_429": server.throttled,
        "share_429": round(server.throttled / len(server.answers), 4),
        "goodput_per_s": round(server.ok / (last_ok - first), 2),
        "seconds": round(last_ok - first, 1),
        "quiet_p50_s": round(statistics.median(quiet), 2),
        "quiet_p95_s": round(p95(quiet), 2),
        "fair_shares": shares(stub, load, tenants),
    }


def fleet_limit(server: DevServer, queue: str, rps: float) -> None:
    """``ratchet fleet limit``, as an operator runs it."""
    argv = [sys.executable, "-m", "ratchet", "fleet", "limit", "--task-queue", queue]
    subprocess.run([*argv, "--rps", f"{rps:g}"], env=env_with_address(server), check=True)


def partitions(count: int) -> list[str]:
    """Dev server flags: each task queue in ``count`` partitions (Temporal's default 4)."""
    flags = []
    for kind in ("Read", "Write"):
        flags += ["--dynamic-config-value", f"matching.numTaskqueue{kind}Partitions={count}"]
    return flags


async def case(server: DevServer, args: argparse.Namespace, name: str) -> dict:
    queue = f"fleet-{name}-{uuid.uuid4().hex[:6]}".replace("_", "-")
    limited = name != "unlimited"
    tenants = QUIET if name == "quiet_only" else [NOISY, *QUIET]
    stub = Stub(args.rate)
    if limited:
        fleet_limit(server, queue, args.limit)
    with stub.server() as provider:
        env = {"OPENAI_BASE_URL": provider.base_url, "OPENAI_API_KEY": "bench"}
        env["PYTHONPATH"] = str(ROOT)
        flags = ["--rate-limited"] if limited else []
        workers = [
            WorkerProcess(server, queue, "bench.fleet:AGENTS", *flags, env=env, cwd=ROOT)
            for _ in range(2)
        ]
        try:
            for worker in workers:
                worker.wait_ready()
            client = await AgentClient.connect(server.address, task_queue=queue)
            counts = sessions_per_tenant(args.sessions, args.factor, [NOISY, *QUIET])
            load = await drive(client, {t: counts[t] for t in tenants}, args.messages)
        finally:
            for worker in workers:
                worker.stop()
        result = {"queue_limit_rps": args.limit if limited else None, "rate_limited": limited}
        result |= summary(stub, provider, load, tenants)
    print(json.dumps({name: result}), flush=True)
    return result


def targets(cases: dict[str, dict], rate: float) -> dict[str, dict]:
    limited, quiet = cases["limited"], cases["quiet_only"]
    ratios = [t["ratio"] for t in limited["fair_shares"].get("by_tenant", {}).values()]
    checks = {
        "0 failed sends": (limited["failed_sends"], limited["failed_sends"] == 0),
        "429s <= 2% of model calls": (limited["share_429"], limited["share_429"] <= 0.02),
        "goodput >= 85% of R": (
            round(limited["goodput_per_s"] / rate, 3),
            limited["goodput_per_s"] >= 0.85 * rate,
        ),
        "each tenant's share within 15% of its weight": (
            ratios,
            bool(ratios) and all(0.85 <= r <= 1.15 for r in ratios),
        ),
        "quiet p95 <= 2x without the noisy tenant": (
            round(limited["quiet_p95_s"] / quiet["quiet_p95_s"], 2),
            limited["quiet_p95_s"] <= 2 * quiet["quiet_p95_s"],
        ),
    }
    return {k: {"value": v, "pass": ok} for k, (v, ok) in checks.items()}


async def measure(args: argparse.Namespace) -> dict:
    load_before = os.getloadavg()
    cases = {}
    with DevServer.start(ui=False, extra_args=partitions(args.partitions)) as server:
        for name in ("limited", "unlimited", "quiet_only"):
            cases[name] = await case(server, args, name)
    if args.default_partitions:
        with DevServer.start(ui=False) as server:  # 4 partitions
            cases["limited_4_partitions"] = await case(server, args, "limited")
    found = targets(cases, args.rate)
    for name, target in found.items():
        print(f"{'PASS' if target['pass'] else 'FAIL'}  {name}: {target['value']}")
    counts = sessions_per_tenant(args.sessions, args.factor, [NOISY, *QUIET])
    return {
        "provider_rps": args.rate,
        "queue_limit_rps": args.limit,
        "sessions": counts,
        "messages_per_session": args.messages,
        "partitions": args.partitions,
        "weights": WEIGHTS,
        "cases": cases,
        "targets": found,
        "machine": {
            "cpus": os.cpu_count(),
            "load_avg_1m_before": round(load_before[0], 2),
            "load_avg_1m_after": round(os.getloadavg()[0], 2),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=10.0, help="the provider's requests/s")
    parser.add_argument("--limit", type=float, default=9.0, help="the queue's limit, turns/s")
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--factor", type=int, default=10, help="the noisy tenant's multiple")
    parser.add_argument("--messages", type=int, default=4, help="per session, one at a time")
    parser.add_argument(
        "--partitions", type=int, default=1, help="each queue's partitions (Temporal's: 4)"
    )
    parser.add_argument(
        "--default-partitions",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also the limited case on a server with Temporal's 4 partitions",
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "fleet.json")
    args = parser.parse_args()
    result = asyncio.run(measure(args))
    result["command"] = "python -m bench.fleet " + " ".join(sys.argv[1:])
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
    hard_exit(0)  # the SDK's runtime can abort the interpreter at exit
