"""A long AG-UI conversation (issue 43): what one run costs as the history an AG-UI
client sends with every message grows to 2,000 messages of 2 KB (about 4 MB).

    .venv/bin/python -m bench.agui_long            # full sizes, writes results/agui_long.json
    .venv/bin/python -m bench.agui_long --quick    # small sizes, writes to /tmp

One dev server, one worker process and one ``ratchet web`` (``tests.web_agents``),
all on this machine. A thread per size is seeded with ``seeder`` (``seed N`` adds N
exchanges of 2,000-character texts). Then rounds: in each, one run per size, the
order of the sizes reversed every other round (ABBA); each run POSTs the thread as
the session holds it plus one new message, as ``@ag-ui/client`` would (a JSON body
made before the clock starts), and reads the SSE response. Measured per run: from
the POST to its first event (``RUN_STARTED``), to its end (``RUN_FINISHED``), the
request's and the response's bytes. Medians per size are reported, with the
ratio to the shortest thread's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx

from ratchet.devserver import DevServer
from ratchet.process import hard_exit

from .web import Cluster, machine

RESULTS = Path(__file__).parent / "results"
AGENTS = "tests.web_agents:AGENTS"
SEED_PER_SEND = 250
"""Exchanges one ``seed`` send adds (about 1 MB: a Temporal payload holds 2 MB)."""


@dataclass
class Sizes:
    messages: tuple[int, ...] = (2, 500, 1000, 2000)
    """Messages in each thread before its runs (about: seeds add 502 at a time)."""
    rounds: int = 20


QUICK = Sizes(messages=(2, 500, 2000), rounds=4)


def _input(thread: str, messages: list[dict[str, Any]], text: str) -> bytes:
    new = {"id": f"u-{uuid.uuid4().hex}", "role": "user", "content": text}
    body = {
        "threadId": thread,
        "runId": f"run-{uuid.uuid4().hex}",
        "messages": [*messages, new],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    return json.dumps(body).encode()


async def _held(http: httpx.AsyncClient, thread: str) -> list[dict[str, Any]]:
    found = (await http.get(f"/v1/sessions/{thread}/thread")).json()["messages"]
    return [{"id": m["id"], "role": m["role"], "content": m["content"]} for m in found]


async def _post(http: httpx.AsyncClient, body: bytes) -> dict[str, float]:
    """One run: ms to its first event and to its end; bytes each way."""
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    start = time.perf_counter()
    first = end = None
    size = 0
    async with http.stream("POST", "/v1/agui/seeder", content=body, headers=headers) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            size += len(line) + 1
            if line.startswith("data: "):
                first = first or time.perf_counter()
                if '"RUN_FINISHED"' in line or '"RUN_ERROR"' in line:
                    end = time.perf_counter()
    assert first is not None and end is not None
    return {
        "first_event_ms": (first - start) * 1000,
        "end_ms": (end - start) * 1000,
        "request_bytes": len(body),
        "response_bytes": size,
    }


async def _seed(http: httpx.AsyncClient, messages: int) -> str:
    """A thread holding about ``messages`` messages."""
    thread = f"bench-agui-{uuid.uuid4().hex[:8]}"
    held: list[dict[str, Any]] = []
    left = max(0, messages - 2) // 2
    while True:
        seeds = min(SEED_PER_SEND, left)
        text = f"seed {seeds}" if seeds else "hello"
        await _post(http, _input(thread, held, text))
        held = await _held(http, thread)
        left -= seeds
        if not left:
            return thread


async def bench(sizes: Sizes) -> dict[str, Any]:
    report: dict[str, Any] = {"machine": machine(), "sizes": asdict(sizes)}
    report["command"] = " ".join(["python -m bench.agui_long", *sys.argv[1:]])
    with DevServer.start(ui=False) as server:
        cluster = Cluster(server, 0, agents=AGENTS)  # the tests' agents (seeder)
        try:
            cluster.worker()
            web = cluster.web()
            async with web.http() as http:
                threads = {n: await _seed(http, n) for n in sizes.messages}
                runs: dict[int, list[dict[str, float]]] = {n: [] for n in sizes.messages}
                held = {n: len(await _held(http, t)) for n, t in threads.items()}
                order = list(sizes.messages)
                for round_ in range(sizes.rounds + 1):  # round 0 warms up
                    for n in order:
                        body = _input(threads[n], await _held(http, threads[n]), "hello")
                        took = await _post(http, body)
                        if round_:
                            runs[n].append(took)
                    order.reverse()  # ABBA: who goes first in a round is faster here
        finally:
            cluster.stop()
    report["runs"] = {str(n): rows for n, rows in runs.items()}
    report["summary"] = _summary(runs, held)
    return report


def _summary(runs: dict[int, list[dict[str, float]]], held: dict[int, int]) -> list[dict[str, Any]]:
    base = min(runs)
    medians = {
        n: {k: statistics.median(r[k] for r in rows) for k in rows[0]} for n, rows in runs.items()
    }
    return [
        {
            "messages": held[n],
            "request_kb": round(m["request_bytes"] / 1024),
            "response_bytes": round(m["response_bytes"]),
            "first_event_ms": round(m["first_event_ms"], 1),
            "end_ms": round(m["end_ms"], 1),
            "first_event_ratio": round(m["first_event_ms"] / medians[base]["first_event_ms"], 2),
            "end_ratio": round(m["end_ms"] / medians[base]["end_ms"], 2),
        }
        for n, m in medians.items()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for development")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    sizes = QUICK if args.quick else Sizes()
    default = Path(tempfile.gettempdir()) if args.quick else RESULTS
    out = args.out or default / "agui_long.json"
    report = asyncio.run(bench(sizes))
    out.write_text(json.dumps(report, indent=1) + "\n")
    for row in report["summary"]:
        print(json.dumps(row))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
    hard_exit(0)  # the SDK's runtime can abort the interpreter at exit
