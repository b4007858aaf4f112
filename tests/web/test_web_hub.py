"""The web server's shared subscriptions (``ratchet.web._hub``) against a real dev
server and worker: many watchers, one poller; late joiners miss nothing; a
reader that stops reading is dropped without holding the others up."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from ratchet.client import AgentClient, SessionHandle, new_request_id
from ratchet.client._event_reader import read_events
from ratchet.devserver import DevServer
from ratchet.errors import AnswerUnavailableError
from ratchet.web import _hub as hub_module
from ratchet.web._hub import Hub
from ratchet.worker import build_worker

from ..web_agents import AGENTS, CHATTY_EVENTS, WRITER_WORDS


async def collect(
    watching: Any, into: list[int], half_way: asyncio.Event | None = None, ended: Any = None
) -> None:
    async for item in watching:
        if item is None:
            continue
        into.append(item[0])
        if half_way is not None and len(into) == CHATTY_EVENTS // 2:
            half_way.set()
        if ended is not None and item[1].kind == "run_finished":
            ended.set()


async def test_watchers_share_one_feed_and_late_joiners_catch_up(agent_client: AgentClient):
    hub = Hub(agent_client.temporal)
    async with build_worker(agent_client, AGENTS):
        session = await agent_client.start_session("chatty")
        early: list[list[int]] = [[] for _ in range(5)]
        joined = [asyncio.Event() for _ in early]
        half_way = asyncio.Event()
        readers = [
            asyncio.create_task(collect(hub.watch(session.id, 0, joined=joined[n]), seen, half_way))
            for n, seen in enumerate(early)
        ]
        await asyncio.gather(*(event.wait() for event in joined))
        assert (hub.subscriptions, hub.watchers) == (1, 5)
        sending = asyncio.create_task(session.send("talk"))
        await half_way.wait()
        late: list[int] = []
        readers.append(asyncio.create_task(collect(hub.watch(session.id, 0), late)))
        await sending
        whole = [
            offset
            for offset, _ in await read_events(agent_client.temporal, session.id, 0, until=1 << 30)
        ]
        await session.close()
        await asyncio.gather(*readers)
    for seen in [*early, late]:
        assert seen == whole  # every event, in order, once: across the catch-up seam too
    assert len(whole) > CHATTY_EVENTS
    assert hub.subscriptions == 0  # the feed stopped with the session


async def test_a_reader_that_stops_reading_is_dropped_and_others_go_on(
    agent_client: AgentClient, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(hub_module, "BUFFER", 50)
    hub = Hub(agent_client.temporal)
    async with build_worker(agent_client, AGENTS):
        session = await agent_client.start_session("chatty")
        joined = [asyncio.Event(), asyncio.Event()]
        stalled = hub.watch(session.id, 0, joined=joined[0])
        first = asyncio.ensure_future(anext(stalled))  # joins, then never reads again
        reading: list[int] = []
        finished = asyncio.Event()
        watching = hub.watch(session.id, 0, joined=joined[1])
        reader = asyncio.create_task(collect(watching, reading, ended=finished))
        await asyncio.gather(*(event.wait() for event in joined))
        await session.send("talk")
        await asyncio.gather(first, finished.wait())  # the feed has handed out the whole run
        backlog = [item async for item in stalled]
        await session.close()
        await reader
    # Nothing to catch up on: its first item was the tick that lets a response start.
    # Then what its queue held, and its stream ended, long before the run's end.
    assert first.result() is None
    assert [offset for offset, _ in backlog] == list(range(50))
    assert len(reading) > CHATTY_EVENTS and reading == sorted(set(reading))


async def test_every_reply_of_a_session_reaches_its_watchers(agent_client: AgentClient):
    """What a session's turns send is stamped with the session's id and each run
    counts turns from 1: a second reply's text must not pass for a re-sent copy of
    the first's (it did, to readers that had seen the first)."""
    hub = Hub(agent_client.temporal)
    async with build_worker(agent_client, AGENTS):
        session = await agent_client.start_session("writer")
        await session.send("one")
        joined = asyncio.Event()
        late: list[tuple[int, str]] = []

        async def watch() -> None:
            async for item in hub.watch(session.id, 0, joined=joined):
                if item is not None:
                    late.append((item[0], item[1].kind))

        watcher = asyncio.create_task(watch())
        await joined.wait()  # caught up with the first reply by query
        await session.send("two")
        whole = await read_events(agent_client.temporal, session.id, 0, until=1 << 30)
        await session.close()
        await watcher
    runs = [n for n, (_, event) in enumerate(whole) if event.kind == "run_started"]
    assert len(runs) == 2
    runs_of = (whole[runs[0] : runs[1]], whole[runs[1] :])
    # Each reply's words whole (how many deltas they were joined into depends on timing).
    texts = ["".join(e.text or "" for _, e in part if e.kind == "text_delta") for part in runs_of]
    assert texts[0] == texts[1] == "".join(f"word{n} " for n in range(WRITER_WORDS))
    assert all(sum(e.kind == "text_delta" for _, e in part) > 1 for part in runs_of)
    assert late == [(offset, event.kind) for offset, event in whole]


LOGGERS = ("ratchet.web", "ratchet.client._event_reader")


class Noticed(logging.Handler):
    """Set once a log record's message contains ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text, self.seen = text, asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.seen.set()

    async def wait(self) -> None:
        await asyncio.wait_for(self.seen.wait(), 120)


@pytest.mark.slow
async def test_a_feed_rides_out_a_temporal_restart(tmp_path: Path, task_queue: str):
    """Temporal restarted under a watcher: its stream stays open and goes on with the
    next reply, nothing lost or repeated (a feed retries what Temporal refused while
    it was away, instead of ending every watcher's stream)."""
    db = tmp_path / "temporal.db"
    server = DevServer.start(ui=False, log_dir=tmp_path / "first", db_path=db)
    try:
        client = await AgentClient.connect(server.address, task_queue=task_queue)
        hub = Hub(client.temporal)
        refused = Noticed("again in")
        # The feed's reader retries itself (an INFO record), then the feed does.
        for name in LOGGERS:
            logging.getLogger(name).addHandler(refused)
        logging.getLogger(LOGGERS[1]).setLevel(logging.INFO)
        async with build_worker(client, AGENTS):
            session = await client.start_session("writer")
            joined, seen = asyncio.Event(), []
            replied = asyncio.Event()

            async def watch() -> None:
                async for item in hub.watch(session.id, 0, joined=joined):
                    if item is not None:
                        seen.append((item[0], item[1].kind))
                        if item[1].kind == "run_finished":
                            replied.set()

            watcher = asyncio.create_task(watch())
            await joined.wait()
            await session.send("one")
            await replied.wait()
            server.stop()
            await refused.wait()  # down long enough that the client's own retries gave up
            server = DevServer.start(
                port=server.port, ui=False, log_dir=tmp_path / "second", db_path=db
            )
            await send_until_answered(session, "two")
            whole = await read_events(client.temporal, session.id, 0, until=1 << 30)
            await session.close()
            await asyncio.wait_for(watcher, 60)
    finally:
        for name in LOGGERS:
            logging.getLogger(name).removeHandler(refused)
        logging.getLogger(LOGGERS[1]).setLevel(logging.NOTSET)
        server.stop()
    assert [event.kind for _, event in whole].count("run_finished") == 2
    assert seen == [(offset, event.kind) for offset, event in whole]


async def send_until_answered(session: SessionHandle, prompt: str) -> None:
    """Send as a user's client does after an outage: the worker may still be finding
    the restarted server, so a send that timed out is sent again with its request id
    (taken once, answered once, as the error says), three times at most."""
    request_id = new_request_id()
    for attempt in range(3):
        try:
            await session.send(prompt, request_id=request_id)
            return
        except AnswerUnavailableError:
            if attempt == 2:
                raise
