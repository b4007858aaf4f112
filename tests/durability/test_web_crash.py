"""``ratchet web`` where things die: the web server is SIGKILLed mid-stream and the
client resumes on another replica with ``Last-Event-ID``; the worker is SIGKILLed
mid-reply and the stream shows the retry and still ends with the answer."""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2 as httpx
import pytest
from ag_ui.core import CustomEvent, MessagesSnapshotEvent, TextMessageContentEvent

from ratchet.devserver import DevServer, free_port
from ratchet.testing import ChildProcess, WorkerProcess

from ..conftest import ROOT
from ..web.test_agui import check_order, frames, run_input, user
from ..web_agents import SLOW_EVENTS
from ..web_http import ALICE, sse

ENV = {"RATCHET_WEB_TOKENS": f"alice:{ALICE}", "PYTHONPATH": str(ROOT)}
AUTH = {"Authorization": f"Bearer {ALICE}"}


@pytest.fixture
def queue() -> str:
    return f"web-crash-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def start(temporal_server: DevServer, queue: str) -> Iterator[Any]:
    """Starts ``web`` replicas and workers on one task queue; stops them all after."""
    started: list[ChildProcess] = []

    def web() -> tuple[str, ChildProcess]:
        port = free_port()
        argv = [sys.executable, "-m", "ratchet.cli", "web", "--port", str(port)]
        argv += ["--agents", "tests.web_agents:AGENTS", "--task-queue", queue]
        process = ChildProcess(argv, temporal_server, env=ENV, cwd=ROOT)
        started.append(process)
        process.wait_for("ratchet web on")
        return f"http://127.0.0.1:{port}", process

    def worker() -> WorkerProcess:
        process = WorkerProcess(
            temporal_server, queue, "tests.web_agents:AGENTS", env=ENV, cwd=ROOT
        )
        started.append(process)
        return process.wait_ready()

    yield web, worker
    for process in started:
        process.stop()


async def streamed_reply(http: httpx.AsyncClient, session: str) -> AsyncIterator[Any]:
    """POST a message and read the reply as it streams (SSE frames)."""
    url, accept = f"/v1/sessions/{session}/messages", {"Accept": "text/event-stream"}
    async with http.stream("POST", url, json={"text": "go"}, headers=accept) as response:
        async for frame in sse(response):
            yield frame


async def test_a_stream_cut_by_a_dead_server_resumes_on_another_replica(start):
    web, worker = start
    worker()
    (url_a, server_a), (url_b, _) = web(), web()
    async with httpx.AsyncClient(base_url=url_a, headers=AUTH, timeout=60) as a:
        session = (await a.post("/v1/sessions", json={"agent": "slow"})).json()["id"]
        seen: list[tuple[int | None, str, Any]] = []
        with pytest.raises(httpx.TransportError):  # the server dies under the stream
            async for frame in streamed_reply(a, session):
                seen.append(frame)
                if sum(kind == "custom" for _, kind, _ in seen) == SLOW_EVENTS // 4:
                    server_a.kill()
    last_id = max(event_id for event_id, _, _ in seen if event_id is not None)

    async with httpx.AsyncClient(base_url=url_b, headers=AUTH, timeout=60) as b:
        resumed = []
        headers = {"Last-Event-ID": str(last_id)}
        async with b.stream("GET", f"/v1/sessions/{session}/events", headers=headers) as response:
            async for frame in sse(response):
                resumed.append(frame)
                if frame[1] == "run_finished":
                    break
        await b.post(f"/v1/sessions/{session}/close")
        async with b.stream("GET", f"/v1/sessions/{session}/events") as response:
            everything = [frame async for frame in sse(response)]

    upto = [frame for frame in everything if frame[0] is not None and frame[0] <= last_id]
    assert [f for f in seen if f[0] is not None] == upto
    assert resumed == everything[len(upto) : len(upto) + len(resumed)]  # none lost, none twice
    numbers = [data["data"]["n"] for _, kind, data in seen + resumed if kind == "custom"]
    assert numbers == list(range(SLOW_EVENTS))
    assert resumed[-1][2]["text"] == "done after attempt 1"


async def test_a_worker_killed_mid_reply_shows_the_retry_and_the_answer(start):
    web, worker = start
    first = worker()
    url, _ = web()
    async with httpx.AsyncClient(base_url=url, headers=AUTH, timeout=120) as http:
        session = (await http.post("/v1/sessions", json={"agent": "slow"})).json()["id"]
        frames: list[tuple[int | None, str, Any]] = []
        async for frame in streamed_reply(http, session):
            frames.append(frame)
            if sum(kind == "custom" for _, kind, _ in frames) == SLOW_EVENTS // 4 and first:
                first.kill()
                first = None
                await asyncio.to_thread(worker)  # the turn is retried here
        await http.post(f"/v1/sessions/{session}/close")

    kinds = [kind for _, kind, _ in frames]
    assert "retry" in kinds and kinds[-1] == "result"
    after_retry = frames[kinds.index("retry") + 1 :]
    numbers = [data["data"]["n"] for _, kind, data in after_retry if kind == "custom"]
    assert numbers == list(range(SLOW_EVENTS))  # the retried attempt streamed it all again
    assert frames[-1][2]["output"] == "done after attempt 2"


async def test_an_agui_run_whose_worker_dies_mid_reply_still_finishes(start):
    """The AG-UI stream of a reply whose worker is SIGKILLed after its first words:
    the retry is announced, a snapshot of the thread drops what the lost attempt
    streamed, the retried attempt streams again under the same id (the one the
    thread keeps the reply under), and the run finishes with the answer of attempt
    2 in its result and snapshot."""
    web, worker = start
    first = worker()
    url, _ = web()
    thread = f"agui-crash-{uuid.uuid4().hex[:8]}"
    body = run_input(thread, [user("write")])
    async with httpx.AsyncClient(base_url=url, headers=AUTH, timeout=120) as http:
        events: list[Any] = []
        async with http.stream("POST", "/v1/agui/writer", json=body) as response:
            async for _, event in frames(response):
                events.append(event)
                if isinstance(event, TextMessageContentEvent) and first is not None:
                    first.kill()
                    first = None
                    await asyncio.to_thread(worker)
    check_order(events, body)
    retries = [e for e in events if isinstance(e, CustomEvent) and e.name == "ratchet.retry"]
    assert len(retries) == 1
    streamed = {e.message_id for e in events if isinstance(e, TextMessageContentEvent)}
    retry = events.index(retries[0])
    snapshots = [e for e in events if isinstance(e, MessagesSnapshotEvent)]
    assert snapshots[0] is events[retry + 1]  # the lost attempt's text goes
    assert [m.role for m in snapshots[0].messages] == ["user"]
    assert events[-1].result.endswith("(attempt 2)")
    final = snapshots[-1].messages
    assert [m.role for m in final] == ["user", "assistant"]
    assert streamed == {final[1].id}  # both attempts, under the id the thread keeps
