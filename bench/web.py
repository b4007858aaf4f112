"""``ratchet web`` under watch (issue 17): first-event latency, load, fan-out, a server
killed mid-stream, history per streamed reply.

    .venv/bin/python -m bench.web            # full sizes, writes results/web.json
    .venv/bin/python -m bench.web --quick    # small sizes (2-3 min), writes to /tmp
    .venv/bin/python -m bench.web --only load --sessions 100   # one part, to /tmp

One dev server, worker processes and ``ratchet web`` processes
(``bench.web_agents:AGENTS``), all on this machine, so the wall clocks agree: a
``ticker`` token's text is its emit time, and its delay is its arrival at the
watcher minus that.

1. First event: the same session, a message sent by the Python client
   (``session.events(from_offset=await session.event_offset())`` iterated while
   ``session.send`` runs) and by an SSE client (``POST .../messages`` with
   ``Accept: text/event-stream``), alternating ABBA; from the call until the first
   run event arrives (and the first text).
2. Load: 50, 100, then 200 sessions (``--sessions``) on a web server of their own, each
   with one SSE watcher on ``/events``, each sending a message (JSON) every
   ``period`` seconds, staggered; token delays over ``steady`` seconds after one
   warm-up period; CPU and the server's queries a second, idle and in steady state.
3. Fan-out: ``watchers`` SSE watchers of one session; every event to every one.
4. Kill: a 300-event reply streamed from server A, SIGKILLed mid-stream; resumed on
   server B with ``Last-Event-ID``; ids checked against the session's stream.
5. History: bytes and events the session's workflow history gains per 60-token reply,
   with one SSE watcher and with none.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import random
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import httpx2 as httpx
import temporalio
from temporalio.contrib.workflow_streams._types import PollInput, PollResult

from ratchet.client import AgentClient
from ratchet.client._event_reader import _decoded
from ratchet.devserver import DevServer, free_port
from ratchet.process import hard_exit
from ratchet.testing import ChildProcess, WorkerProcess
from ratchet.types import RunEvent
from ratchet.wire._names import EVENTS_TOPIC, POLL_QUERY
from tests.web_agents import WRITER_WORDS

from .web_agents import LONG_EVENTS, TICKER_TOKENS, stamps

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results"
AGENTS = "bench.web_agents:AGENTS"
TOKEN = secrets.token_urlsafe()
ENV = {"RATCHET_WEB_TOKENS": f"bench:{TOKEN}", "PYTHONPATH": str(ROOT)}
STREAM = {"Accept": "text/event-stream"}
WARMUP_ROUNDS = 3
PARTIAL = Path(tempfile.gettempdir()) / "web.partial.json"  # the parts done so far
EXCEPTION = re.compile(r"^[\w.]+(Error|Exception): ")  # a traceback's last line
PARTS = ["first_event", "history", "fan_out", "kill", "load"]
Item = tuple[int, RunEvent]


@dataclass
class Sizes:
    rounds: int = 30
    sessions: tuple[int, ...] = (50, 100, 200)
    period: float = 20.0
    steady: float = 60.0
    watchers: int = 100
    fan_out_replies: int = 3
    kills: int = 6
    history_replies: int = 3
    idle: float = 15.0


QUICK = Sizes(
    rounds=6, sessions=(20,), period=10, steady=20, watchers=20, fan_out_replies=1, kills=2,
    history_replies=2, idle=8,
)  # fmt: skip


# Processes


@dataclass
class Web:
    url: str
    process: ChildProcess

    def http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.url,
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=httpx.Timeout(60, connect=10),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=None),
        )


@dataclass
class Cluster:
    """The web servers and workers of one task queue; ``stop`` ends every one started."""

    server: DevServer
    metrics_port: int
    queue: str = field(default_factory=lambda: f"bench-web-{uuid.uuid4().hex[:8]}")
    started: list[ChildProcess] = field(default_factory=list)
    agents: str = AGENTS
    """``module:ATTR`` of the agents the workers host and the web servers name."""

    def web(self) -> Web:
        port = free_port()
        argv = [sys.executable, "-m", "ratchet.cli", "web", "--port", str(port)]
        argv += ["--agents", self.agents, "--task-queue", self.queue]
        process = ChildProcess(argv, self.server, env=ENV, cwd=ROOT)
        self.started.append(process)
        process.wait_for("ratchet web on")
        return Web(f"http://127.0.0.1:{port}", process)

    def worker(self) -> WorkerProcess:
        process = WorkerProcess(self.server, self.queue, self.agents, env=ENV, cwd=ROOT)
        self.started.append(process)
        return process.wait_ready()

    def stop(self) -> None:
        for process in self.started:
            process.stop()


def rss_kb(pid: int, key: str = "VmRSS") -> int:
    """Resident memory of ``pid`` (``VmHWM``: its peak so far)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    return 0


def frontend_queries(metrics_port: int) -> float:
    """Workflow queries the dev server's frontend has answered (every SSE poll is one)."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics").read().decode()
    pattern = re.compile(
        r'^service_requests\{[^}]*operation="QueryWorkflow",service_name="frontend"\} (\S+)$'
    )
    return sum(float(m.group(1)) for line in text.splitlines() if (m := pattern.match(line)))


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def usage(cluster: Cluster, web: int, workers: list[WorkerProcess]) -> dict[str, float]:
    """CPU seconds so far of each process, and the server's queries answered."""
    temporal = cluster.server.process
    return {
        "web_cpu": cpu_seconds(web),
        "workers_cpu": sum(cpu_seconds(w.pid) for w in workers),
        "temporal_cpu": cpu_seconds(temporal.pid) if temporal else 0.0,
        "bench_cpu": sum(os.times()[:2]),
        "queries": frontend_queries(cluster.metrics_port),
    }


async def usage_between(
    cluster: Cluster, web: int, workers: list[WorkerProcess], start: float, end: float
) -> dict[str, float]:
    """CPU cores of each process and server queries a second, from ``start`` to ``end``
    (wall clock)."""
    await asyncio.sleep(max(0.0, start - time.time()))
    before = await asyncio.to_thread(usage, cluster, web, workers)
    await asyncio.sleep(max(0.0, end - time.time()))
    after = await asyncio.to_thread(usage, cluster, web, workers)
    return {k: round((after[k] - before[k]) / (end - start), 2) for k in after}


# SSE


@dataclass
class Frame:
    id: int | None
    kind: str
    data: Any
    at: float  # wall clock on arrival (against the agents' stamps)
    mono: float  # perf_counter on arrival (for latencies)


async def frames(response: httpx.Response) -> AsyncIterator[Frame]:
    fields: dict[str, str] = {}
    async for line in response.aiter_lines():
        if line == "":
            if "event" in fields:
                event_id = int(fields["id"]) if "id" in fields else None
                data = json.loads(fields["data"])
                yield Frame(event_id, fields["event"], data, time.time(), time.perf_counter())
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(": ")
            fields[name] = value


async def new_session(http: httpx.AsyncClient, agent: str) -> str:
    response = await http.post("/v1/sessions", json={"agent": agent})
    response.raise_for_status()
    return response.json()["id"]


async def send(http: httpx.AsyncClient, session: str) -> None:
    response = await http.post(f"/v1/sessions/{session}/messages", json={"text": "go"})
    response.raise_for_status()


async def server_counts(http: httpx.AsyncClient) -> dict[str, int]:
    return (await http.get("/v1/server")).json()


async def wait_for_watchers(
    http: httpx.AsyncClient, watchers: int, within: float = 120, *, strict: bool = True
) -> int:
    """Until the server counts ``watchers``; how many it counted (all, unless not
    ``strict`` and ``within`` seconds passed first)."""
    deadline = time.monotonic() + within
    while (now := (await server_counts(http))["watchers"]) < watchers:
        if time.monotonic() > deadline:
            if strict:
                raise AssertionError(f"{watchers} watchers did not connect in {within:.0f} s")
            return now
        await asyncio.sleep(0.2)
    return now


async def stream(
    client: AgentClient, session: str, start: int = 0, *, to_end: bool = False
) -> list[Item]:
    """The session's events from offset ``start`` through the next ``run_finished``
    (one whole reply; with ``to_end``, all it holds now), as the stream holds them:
    read with its poll query directly, without the client's de-duplication of
    re-sent batches, so it is what every watcher should get."""
    handle = client.temporal.get_workflow_handle(session)
    items: list[Item] = []
    offset = start
    while True:
        polled = await handle.query(
            POLL_QUERY, PollInput(topics=[EVENTS_TOPIC], from_offset=offset), result_type=PollResult
        )
        for item in _decoded(client.temporal, polled):
            items.append(item)
            if item[1].kind == "run_finished" and not to_end:
                return items
        if not polled.items and to_end:
            return items
        if polled.next_offset == offset:
            await asyncio.sleep(0.1)  # the reply is still being written
        offset = polled.next_offset


# Figures


def quantile(values: list[float], q: float) -> float:
    """Nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def delays_ms(delays: list[float]) -> dict[str, Any]:
    if not delays:
        return {"count": 0}
    return {
        "count": len(delays),
        "p50_ms": ms(quantile(delays, 0.5)),
        "p95_ms": ms(quantile(delays, 0.95)),
        "p99_ms": ms(quantile(delays, 0.99)),
        "max_ms": ms(max(delays)),
    }


def min_max(values: Iterable[int]) -> list[int]:
    ordered = sorted(values)
    return [ordered[0], ordered[-1]]


def bootstrap_ratio(a: list[float], b: list[float], draws: int = 5000) -> list[float]:
    """95% interval of median(b) / median(a), resampling rounds (pairs kept together)."""
    rng = random.Random(17)
    pairs = list(zip(a, b, strict=True))
    ratios = []
    for _ in range(draws):
        sample = [rng.choice(pairs) for _ in pairs]
        ratios.append(
            statistics.median(y for _, y in sample) / statistics.median(x for x, _ in sample)
        )
    return [round(quantile(ratios, 0.025), 2), round(quantile(ratios, 0.975), 2)]


# 1. First event


async def first_event(web: Web, client: AgentClient, rounds: int) -> dict[str, Any]:
    async with web.http() as http:
        session = client.get_session(await new_session(http, "ticker"))

        async def python() -> tuple[float, float]:
            started = time.perf_counter()
            events = cast(
                AsyncGenerator[RunEvent],
                session.events(from_offset=await session.event_offset()),
            )
            sending = asyncio.ensure_future(session.send("go"))
            first = text = None
            async for event in events:
                now = time.perf_counter()
                first = now if first is None else first
                if event.kind == "text_delta":
                    text = now
                    break
            await events.aclose()
            await sending
            assert first is not None and text is not None
            return first - started, text - started

        async def sse() -> tuple[float, float]:
            started = time.perf_counter()
            first = text = None
            url = f"/v1/sessions/{session.id}/messages"
            async with http.stream("POST", url, json={"text": "go"}, headers=STREAM) as response:
                response.raise_for_status()
                async for frame in frames(response):
                    if frame.id is None:
                        continue  # the result
                    first = frame.mono if first is None else first
                    if frame.kind == "text_delta" and text is None:
                        text = frame.mono
            assert first is not None and text is not None
            return first - started, text - started

        rows: list[dict[str, Any]] = []
        for i in range(WARMUP_ROUNDS + rounds):
            order: list[tuple[str, Callable[[], Awaitable[tuple[float, float]]]]] = [
                ("python", python),
                ("sse", sse),
            ]
            if i % 2:
                order.reverse()  # ABBA: who goes first in a round is faster here
            row: dict[str, Any] = {"first": order[0][0]}
            for name, measure in order:
                row[name], row[f"{name}_text"] = await measure()
            if i >= WARMUP_ROUNDS:
                rows.append(row)

    def figures(key: str) -> dict[str, Any]:
        a = [r["python" + key] for r in rows]
        b = [r["sse" + key] for r in rows]
        per_round = [y / x for x, y in zip(a, b, strict=True)]
        return {
            "python_ms_median": ms(statistics.median(a)),
            "sse_ms_median": ms(statistics.median(b)),
            "ratio_of_medians": round(statistics.median(b) / statistics.median(a), 2),
            "ratio_ci95": bootstrap_ratio(a, b),
            "round_ratio_quartiles": [round(quantile(per_round, q), 2) for q in (0.25, 0.5, 0.75)],
            "python_ms": [ms(x) for x in a],
            "sse_ms": [ms(x) for x in b],
        }

    return {
        "rounds": rounds,
        "warmup_rounds": WARMUP_ROUNDS,
        "target_ratio": 1.2,
        "first_event": figures(""),
        "first_text": figures("_text"),
    }


# 2. Load


@dataclass
class Watch:
    """One SSE watcher of a session's events: token delays, replies, errors."""

    http: httpx.AsyncClient
    session: str
    window: tuple[float, float] = (0.0, math.inf)  # tokens emitted then are counted
    delays: list[float] = field(default_factory=list)
    first_delays: list[float] = field(default_factory=list)  # each reply's first token
    events: int = 0
    replies: int = 0
    incomplete: int = 0
    errors: list[str] = field(default_factory=list)
    last_id: int | None = None
    tokens: int | None = None

    def take(self, frame: Frame) -> None:
        self.last_id = frame.id if frame.id is not None else self.last_id
        start, end = self.window
        if frame.kind == "run_started":
            self.tokens = 0
        elif frame.kind == "text_delta" and self.tokens is not None:
            emitted = stamps(frame.data.get("text"))
            for n, stamp in enumerate(emitted):
                if start <= stamp < end:
                    self.delays.append(frame.at - stamp)
                    if self.tokens + n == 0:
                        self.first_delays.append(frame.at - stamp)
            self.tokens += len(emitted)
        elif frame.kind == "run_finished" and self.tokens is not None:
            self.replies += 1
            self.incomplete += self.tokens != TICKER_TOKENS
            self.tokens = None
        if start <= frame.at < end:
            self.events += 1

    async def run(self) -> None:
        """Follow until cancelled; a stream that ends or breaks is resumed from its
        last id and counted as an error."""
        while True:
            headers = {} if self.last_id is None else {"Last-Event-ID": str(self.last_id)}
            url = f"/v1/sessions/{self.session}/events"
            try:
                async with self.http.stream("GET", url, headers=headers) as response:
                    response.raise_for_status()
                    async for frame in frames(response):
                        self.take(frame)
                self.errors.append("stream ended")
            except httpx.HTTPError as e:
                self.errors.append(f"{type(e).__name__}: {e}")
            await asyncio.sleep(0.5)


async def load(
    cluster: Cluster,
    client: AgentClient,
    sizes: Sizes,
    workers: list[WorkerProcess],
    sessions: int,
) -> dict[str, Any]:
    web = cluster.web()
    pid = web.process.pid
    rss_at_start = rss_kb(pid)
    async with web.http() as http:
        gate = asyncio.Semaphore(20)

        async def create() -> str:
            async with gate:
                return await new_session(http, "ticker")

        ids = await asyncio.gather(*(create() for _ in range(sessions)))

        watches = [Watch(http, session) for session in ids]
        watching = [asyncio.ensure_future(w.run()) for w in watches]
        connecting = time.perf_counter()
        connected = await wait_for_watchers(http, sessions, 180, strict=False)
        connect_s = time.perf_counter() - connecting
        await asyncio.sleep(5)  # the watchers' polls back off to their idle pace
        now = time.time()
        idle = await usage_between(cluster, pid, workers, now, now + sizes.idle)
        begin = time.time() + 1
        steady_from = begin + sizes.period  # after one warm-up period
        steady_until = steady_from + sizes.steady
        for watch in watches:
            watch.window = (steady_from, steady_until)

        sends: list[float] = []
        send_errors: list[str] = []
        late = 0

        async def sender(i: int) -> None:
            nonlocal late
            at = begin + i * sizes.period / sessions
            while at < steady_until:
                now = time.time()
                if now > at + 1:
                    late += 1
                await asyncio.sleep(max(0.0, at - now))
                started = time.perf_counter()
                try:
                    await send(http, ids[i])
                    if steady_from <= time.time() < steady_until:
                        sends.append(time.perf_counter() - started)
                except httpx.HTTPError as e:
                    send_errors.append(f"{type(e).__name__}: {e}")
                at += sizes.period

        samples: list[dict[str, Any]] = []

        async def sample() -> None:
            while True:
                counts = await server_counts(http)
                samples.append({"at": time.time(), "rss_kb": rss_kb(pid), **counts})
                await asyncio.sleep(1)

        sampling = asyncio.ensure_future(sample())

        measuring = asyncio.ensure_future(
            usage_between(cluster, pid, workers, steady_from, steady_until)
        )
        await asyncio.gather(*(sender(i) for i in range(sessions)))
        steady = await measuring
        await asyncio.sleep(5)  # the last replies' events reach their watchers
        sampling.cancel()
        for task in watching:
            task.cancel()
        await asyncio.gather(*watching, sampling, return_exceptions=True)
        closing = [client.get_session(session).close() for session in ids]  # idle from now
        await asyncio.wait([asyncio.ensure_future(c) for c in closing], timeout=60)
    rss_at_end, rss_peak = rss_kb(pid), rss_kb(pid, "VmHWM")
    web.process.stop()
    web_errors = [line.strip() for line in web.process.lines if EXCEPTION.match(line)]

    counts = [s for s in samples if steady_from <= s["at"] < steady_until]
    delays = [d for w in watches for d in w.delays]
    emitted = 0
    for session in ids:
        for _, event in await stream(client, session, to_end=True):
            if event.kind == "text_delta":
                emitted += sum(steady_from <= t < steady_until for t in stamps(event.text))
    return {
        "sessions": sessions,
        "period_s": sizes.period,
        "steady_s": sizes.steady,
        "workers": len(workers),
        "watchers_connected": connected,
        "connect_s": round(connect_s, 1),
        "sends_in_steady_state": len(sends),
        "send_errors": send_errors[:5],
        "send_error_count": len(send_errors),
        "late_sends": late,
        "reply_s": {
            "p50": round(quantile(sends, 0.5), 2) if sends else None,
            "p95": round(quantile(sends, 0.95), 2) if sends else None,
        },
        "events_in_steady_state": sum(w.events for w in watches),
        "tokens_emitted": emitted,
        "tokens_received": len(delays),
        "token_delay": delays_ms(delays),
        "first_token_delay": delays_ms([d for w in watches for d in w.first_delays]),
        "replies_watched": sum(w.replies for w in watches),
        "replies_incomplete": sum(w.incomplete for w in watches),
        "watcher_errors": sum(len(w.errors) for w in watches),
        "watcher_error_examples": [e for w in watches for e in w.errors][:5],
        "subscriptions": [
            min(c["subscriptions"] for c in counts),
            max(c["subscriptions"] for c in counts),
        ],
        "watchers": [min(c["watchers"] for c in counts), max(c["watchers"] for c in counts)],
        "rss_mb": {
            "start": round(rss_at_start / 1024, 1),
            "peak": round(rss_peak / 1024, 1),
            "end": round(rss_at_end / 1024, 1),
        },
        "idle_s": sizes.idle,
        "idle": idle,
        "steady": steady,
        "web_server_exceptions": len(web_errors),
        "web_server_exception_examples": sorted(set(web_errors))[:5],
    }


async def loads(
    cluster: Cluster, client: AgentClient, sizes: Sizes, workers: list[WorkerProcess]
) -> list[dict[str, Any]]:
    """``load`` at each number of sessions, each on a web server of its own."""
    return [await load(cluster, client, sizes, workers, n) for n in sizes.sessions]


# 3. Fan-out


async def fan_out(web: Web, client: AgentClient, watchers: int, replies: int) -> dict[str, Any]:
    async with web.http() as http:
        session = await new_session(http, "ticker")
        received: list[list[Frame]] = [[] for _ in range(watchers)]

        watching = [asyncio.ensure_future(collect(http, session, into)) for into in received]
        await wait_for_watchers(http, watchers)
        during: list[dict[str, int]] = []
        for _ in range(replies):
            sending = asyncio.ensure_future(send(http, session))
            await asyncio.sleep(1)  # mid-reply
            during.append(await server_counts(http))
            await sending
        await http.post(f"/v1/sessions/{session}/close")  # the streams end with it
        done, pending = await asyncio.wait(watching, timeout=60)
        for task in pending:
            task.cancel()
        errors = [repr(t.exception()) for t in done if t.exception() is not None]

    expected: list[Item] = []
    for _ in range(replies):
        expected += await stream(client, session, expected[-1][0] + 1 if expected else 0)
    ids = {offset for offset, _ in expected}
    got = [{f.id for f in frames_ if f.id is not None} & ids for frames_ in received]
    missing = [event.kind for offset, event in expected for g in got if offset not in g]
    delays = [f.at - stamp for frames_ in received for f in frames_ for stamp in stamps_of(f)]
    emitted = [s for _, e in expected if e.kind == "text_delta" for s in stamps(e.text)]
    return {
        "watchers": watchers,
        "replies": replies,
        "server_during_reply": during,
        "events_per_watcher": len(expected),
        "watchers_with_every_event": sum(g == ids for g in got),
        "events_missed": len(missing),
        "events_missed_by_kind": {kind: missing.count(kind) for kind in sorted(set(missing))},
        "tokens_received": len(delays),
        "tokens_expected": watchers * len(emitted),
        "delivery_delay": delays_ms(delays),
        "errors": errors[:5],
    }


def stamps_of(frame: Frame) -> list[float]:
    return stamps(frame.data.get("text")) if frame.kind == "text_delta" else []


# 4. Kill and reconnect


async def kill_and_reconnect(cluster: Cluster, client: AgentClient, kills: int) -> dict[str, Any]:
    web_b = cluster.web()
    rows = []
    async with web_b.http() as b:
        for k in range(kills):
            web_a = cluster.web()
            kill_after = LONG_EVENTS * (k + 1) // (kills + 1)  # spread over the reply
            seen: list[Frame] = []
            killed_at = 0.0
            async with web_a.http() as a:
                session = await new_session(a, "long")
                start = await client.get_session(session).event_offset()
                url = f"/v1/sessions/{session}/messages"
                try:
                    async with a.stream("POST", url, json={"text": "go"}, headers=STREAM) as r:
                        async for frame in frames(r):
                            seen.append(frame)
                            if not killed_at and of_kind(seen, "custom") == kill_after:
                                killed_at = time.perf_counter()
                                web_a.process.kill()
                except httpx.TransportError:
                    pass  # the server died under the stream
            last_id = max(f.id for f in seen if f.id is not None)
            resumed: list[Frame] = []
            headers = {"Last-Event-ID": str(last_id)}
            url = f"/v1/sessions/{session}/events"
            async with b.stream("GET", url, headers=headers) as response:
                async for frame in frames(response):
                    resumed.append(frame)
                    if frame.kind == "run_finished":
                        break
            await b.post(f"/v1/sessions/{session}/close")
            expected = [offset for offset, _ in await stream(client, session, start)]
            ids = [f.id for f in seen + resumed if f.id is not None]
            numbers = [f.data["data"]["n"] for f in seen + resumed if f.kind == "custom"]
            rows.append(
                {
                    "killed_after_events": kill_after,
                    "seen_before_kill": len([f for f in seen if f.id is not None]),
                    "resumed": len(resumed),
                    "expected": len(expected),
                    "lost": len(set(expected) - set(ids)),
                    "duplicated": len(ids) - len(set(ids)),
                    "foreign": len(set(ids) - set(expected)),
                    "numbers_in_order": numbers == list(range(LONG_EVENTS)),
                    "kill_to_resumed_event_s": round(resumed[0].mono - killed_at, 2),
                }
            )
            print(f"  kill {k + 1}: {rows[-1]}", flush=True)
    return {
        "kills": kills,
        "events_per_reply": LONG_EVENTS,
        "lost": sum(r["lost"] for r in rows),
        "duplicated": sum(r["duplicated"] for r in rows),
        "foreign": sum(r["foreign"] for r in rows),
        "all_in_order": all(r["numbers_in_order"] for r in rows),
        "rows": rows,
    }


async def collect(http: httpx.AsyncClient, session: str, into: list[Frame]) -> None:
    """Every frame of the session's events, until the stream ends."""
    async with http.stream("GET", f"/v1/sessions/{session}/events") as response:
        response.raise_for_status()
        async for frame in frames(response):
            into.append(frame)


def of_kind(frames_: list[Frame], kind: str) -> int:
    return sum(f.kind == kind for f in frames_)


# 5. History per reply


async def history(client: AgentClient, session: str) -> tuple[int, int]:
    """The session workflow's (current run's) history: events and serialized bytes."""
    events = (await client.temporal.get_workflow_handle(session).fetch_history()).events
    return len(events), sum(event.ByteSize() for event in events)


async def history_per_reply(web: Web, client: AgentClient, replies: int) -> dict[str, Any]:
    out: dict[str, Any] = {"tokens_per_reply": WRITER_WORDS, "replies": replies}
    async with web.http() as http:
        for watched in (True, False):
            session = await new_session(http, "writer")
            seen: list[Frame] = []
            watching = None
            if watched:
                watching = asyncio.ensure_future(collect(http, session, seen))
                await wait_for_watchers(http, 1)
            await asyncio.sleep(1)
            marks = [await history(client, session)]
            streamed: list[list[Item]] = []
            for _ in range(replies):
                offset = await client.get_session(session).event_offset()
                await send(http, session)
                streamed.append(await stream(client, session, offset))
                await asyncio.sleep(1)  # anything the workflow writes after the reply
                marks.append(await history(client, session))
            events = [b[0] - a[0] for a, b in zip(marks, marks[1:], strict=False)]
            sizes = [b[1] - a[1] for a, b in zip(marks, marks[1:], strict=False)]
            bytes_ = statistics.median(sizes)
            row: dict[str, Any] = {
                "history_events_per_reply": statistics.median(events),
                "history_bytes_per_reply": bytes_,
                "history_bytes_per_token": round(bytes_ / WRITER_WORDS, 1),
                "history_events_all": events,
                "history_bytes_all": sizes,
                "stream_events_per_reply": [len(reply) for reply in streamed],
                "stream_text_deltas_per_reply": [
                    sum(event.kind == "text_delta" for _, event in reply) for reply in streamed
                ],
            }
            if watching is not None:
                await http.post(f"/v1/sessions/{session}/close")
                await asyncio.wait_for(watching, 30)
                ids = {f.id for f in seen}
                row["watcher_events_per_reply"] = [
                    sum(offset in ids for offset, _ in reply) for reply in streamed
                ]
            out["watched" if watched else "unwatched"] = row
    return out


# The run


def machine() -> dict[str, Any]:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "temporalio": temporalio.__version__,
        "load_average_at_start": round(os.getloadavg()[0], 2),
        "commit": commit,
    }


async def bench(sizes: Sizes, workers: int, parts: list[str]) -> dict[str, Any]:
    """Runs ``parts``; the report so far is written to ``PARTIAL`` after each."""
    report: dict[str, Any] = {"machine": machine(), "sizes": asdict(sizes)}
    report["command"] = " ".join(["python -m bench.web", *sys.argv[1:]])
    metrics_port = free_port()
    with DevServer.start(ui=False, extra_args=["--metrics-port", str(metrics_port)]) as server:
        cluster = Cluster(server, metrics_port)
        try:
            running = [cluster.worker() for _ in range(workers)]
            client = await AgentClient.connect(server.address, task_queue=cluster.queue)
            web = cluster.web()
            steps: dict[str, Callable[[], Awaitable[Any]]] = {
                "first_event": lambda: first_event(web, client, sizes.rounds),
                "history": lambda: history_per_reply(web, client, sizes.history_replies),
                "fan_out": lambda: fan_out(web, client, sizes.watchers, sizes.fan_out_replies),
                "kill": lambda: kill_and_reconnect(cluster, client, sizes.kills),
                "load": lambda: loads(cluster, client, sizes, running),
            }
            for part in parts:
                print(f"{part} ...", flush=True)
                report[part] = await steps[part]()
                await asyncio.to_thread(PARTIAL.write_text, json.dumps(report, indent=1))
        finally:
            cluster.stop()
    return report


def summary(report: dict[str, Any]) -> str:
    lines = []
    for part in PARTS:
        if part not in report:
            continue
        figures = report[part]
        if part == "first_event":
            figures = {k: v for k, v in figures.items() if k in ("first_event", "first_text")}
            for row in figures.values():
                del row["python_ms"], row["sse_ms"]
        lines.append(f"{part}: {json.dumps(figures)}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for development")
    parser.add_argument("--workers", type=int, default=1, help="worker processes")
    parser.add_argument("--sessions", type=int, nargs="+", help="load: these many sessions")
    parser.add_argument("--only", choices=PARTS, action="append", help="run only these parts")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    sizes = QUICK if args.quick else Sizes()
    sizes = replace(sizes, sessions=tuple(args.sessions)) if args.sessions else sizes
    whole = not (args.quick or args.only or args.sessions)  # what results/web.json holds
    out = args.out or (RESULTS / "web.json" if whole else Path(tempfile.gettempdir()) / "web.json")
    report = asyncio.run(bench(sizes, args.workers, args.only or PARTS))
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(summary(json.loads(json.dumps(report))))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
    hard_exit(0)  # the SDK's runtime can abort the interpreter at exit
