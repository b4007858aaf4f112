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

The shares count the turns the server dispatched while every tenant had a turn
waiting in the queue (from the sessions' histories: each turn's scheduled and
started events), against each one's weight / the weights' sum.
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

from temporalio.api.enums.v1 import EventType

from ratchet.agents import Agent, OpenAIChatModel, ToolCallingAgent
from ratchet.client import AgentClient
from ratchet.devserver import DevServer, env_with_address
from ratchet.process import hard_exit
from ratchet.testing import OpenAIServer, Reply, Request, WorkerProcess, json_reply
from ratchet.wire import TURN_ACTIVITY, RunOptions, SessionOptions

from ._results import write_result

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).parent.parent
NOISY = "noisy"
QUIET = ["quiet-1", "quiet-2", "quiet-3", "quiet-4"]
WEIGHTS = {NOISY: 1.0, "quiet-1": 2.0, "quiet-2": 1.0, "quiet-3": 1.0, "quiet-4": 1.0}
SCHEDULED = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
STARTED = EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED


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
    """What the client saw: each send's tenant, start and end, failures; the sessions."""

    sends: list[tuple[str, float, float]] = field(default_factory=list[tuple[str, float, float]])
    failures: list[str] = field(default_factory=list[str])
    sessions: list[str] = field(default_factory=list[str])


def sessions_per_tenant(total: int, factor: int, tenants: list[str]) -> dict[str, int]:
    quiet = round(total / (len(tenants) - 1 + factor))
    return {t: (total - quiet * (len(tenants) - 1) if t == NOISY else quiet) for t in tenants}


async def drive(client: AgentClient, counts: dict[str, int], messages: int) -> Load:
    load, sessions = Load(), []
    for tenant, n in counts.items():
        run = RunOptions(fairness_key=tenant, fairness_weight=WEIGHTS[tenant])
        for i in range(n):
            handle = await client.start_session(
                "chat", owner=f"{tenant}-user-{i}", tenant=tenant, options=SessionOptions(run=run)
            )
            sessions.append((tenant, handle))
            load.sessions.append(handle.id)

    async def one(tenant: str, handle: Any, n: int) -> None:
        for m in range(n):
            started = time.monotonic()
            try:
                await handle.send(f"{tenant} {handle.id} {m}")
            except Exception as e:  # counted, reported
                load.failures.append(f"{type(e).__name__}: {e}"[:300])
            load.sends.append((tenant, started, time.monotonic()))

    # Each session sends its first message at once: the noisy tenant's first.
    await asyncio.gather(*(one(t, h, messages) for t, h in sessions))
    return load


async def turns(client: AgentClient, session_ids: list[str]) -> list[tuple[float, float, str]]:
    """Each turn's time in the queue, from its sessions' histories: when it was
    scheduled and when the server gave it to a worker (its last attempt), and its key."""
    found = []
    for session_id in session_ids:
        async for run in client.temporal.list_workflows(f"WorkflowId = '{session_id}'"):
            handle = client.temporal.get_workflow_handle(session_id, run_id=run.run_id)
            scheduled = {}
            async for event in handle.fetch_history_events():
                if event.event_type == SCHEDULED:
                    attributes = event.activity_task_scheduled_event_attributes
                    if attributes.activity_type.name == TURN_ACTIVITY:
                        key = attributes.priority.fairness_key
                        scheduled[event.event_id] = (event.event_time.ToDatetime(), key)
                elif event.event_type == STARTED:
                    attributes = event.activity_task_started_event_attributes
                    if attributes.scheduled_event_id in scheduled:
                        at, key = scheduled[attributes.scheduled_event_id]
                        start = event.event_time.ToDatetime()
                        found.append((at.timestamp(), start.timestamp(), key))
    return found


def shares(queued: list[tuple[float, float, str]], tenants: list[str]) -> dict[str, Any]:
    """Each tenant's share of the turns dispatched while every tenant had a turn
    waiting in the queue (scheduled, not yet given to a worker)."""
    changes = sorted([(s, 1, k) for s, _, k in queued] + [(d, -1, k) for _, d, k in queued])
    waiting, spans, since = dict.fromkeys(tenants, 0), [], None
    for at, step, key in changes:
        waiting[key] += step
        every = all(n > 0 for n in waiting.values())
        if every and since is None:
            since = at
        elif not every and since is not None:
            spans.append((since, at))
            since = None
    dispatched = Counter(k for _, d, k in queued if any(start < d <= end for start, end in spans))
    total, weights = sum(dispatched.values()), sum(WEIGHTS[t] for t in tenants)
    return {
        "window_s": round(sum(end - start for start, end in spans), 1),
        "turns": total,
        "by_tenant": {
            t: {
                "turns": dispatched[t],
                "share": round(dispatched[t] / max(1, total), 3),
                "weight_share": round(WEIGHTS[t] / weights, 3),
                "ratio": round(dispatched[t] / max(1, total) / (WEIGHTS[t] / weights), 3),
            }
            for t in tenants
        },
    }


def p95(values: list[float]) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


def summary(stub: Stub, server: OpenAIServer, load: Load, queued: list, tenants: list[str]) -> dict:
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
        "queue_wait_p95_s": round(p95([d - s for s, d, _ in queued]), 2),
        "turns_by_key": dict(Counter(k for _, _, k in queued)),
        "fair_shares": shares(queued, tenants),
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
            queued = await turns(client, load.sessions)
        finally:
            for worker in workers:
                worker.stop()
        result = {"queue_limit_rps": args.limit if limited else None, "rate_limited": limited}
        result |= summary(stub, provider, load, queued, tenants)
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
    write_result(result, args.out, "fleet")


if __name__ == "__main__":
    main()
    hard_exit(0)  # the SDK's runtime can abort the interpreter at exit
