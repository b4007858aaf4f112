"""Server-Sent Events: a session's or run's events, each with its stream offset as
its SSE ``id``, so ``Last-Event-ID`` resumes exactly after it on any replica.

Each watcher reads through a bounded buffer: one that reads nothing while
``BUFFER`` events pile up is disconnected (it reconnects with its last id) instead
of holding memory or slowing anyone else. A comment line every ``KEEPALIVE``
seconds keeps proxies from closing an idle stream.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable
from typing import Any

from ratchet.agents.events import RunEvent, RunFinished
from ratchet.client import AgentClient
from ratchet.client.events import numbered_events
from ratchet.wire.runs import RunResult

from .bodies import full
from .problems import for_exception

BUFFER = 1_000
KEEPALIVE = 15.0
FINISH_GRACE = 10.0
_END = object()


def frame(kind: str, data: Any, event_id: int | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def result_json(result: RunResult) -> dict[str, Any]:
    """A run's result as the API returns it: ``output`` is the answer's text."""
    return {**full(result), "output": result.output}


def event_frame(offset: int, event: RunEvent) -> str:
    return frame(event.kind, full(event), offset)


async def _pump(source: AsyncIterator[Any], queue: asyncio.Queue[Any]) -> None:
    try:
        async for item in source:
            queue.put_nowait(item)  # QueueFull ends the pump: the reader is too slow
        queue.put_nowait(_END)
    except asyncio.QueueFull:
        return
    except Exception as e:  # noqa: BLE001 - handed to the reader, which reports it
        queue.put_nowait(e)


async def buffered(source: AsyncIterator[Any]) -> AsyncGenerator[Any]:
    """``source`` read ahead into a bounded buffer; yields ``None`` as a keep-alive
    tick when nothing came for ``KEEPALIVE`` seconds. Ends quietly when the buffer
    overflowed (the reader was too slow) and raises what ``source`` raised."""
    queue: asyncio.Queue[Any] = asyncio.Queue(BUFFER)
    pump = asyncio.create_task(_pump(source, queue))
    try:
        while True:
            if pump.done() and queue.empty():
                return  # overflowed: the client reconnects with its last id
            try:
                item = await asyncio.wait_for(queue.get(), KEEPALIVE)
            except TimeoutError:
                yield None
                continue
            if item is _END:
                return
            if isinstance(item, Exception):
                raise item
            yield item
    finally:
        pump.cancel()


async def follow(client: AgentClient, workflow_id: str, after: int | None) -> AsyncIterator[str]:
    """Every event of ``workflow_id`` after offset ``after`` (all when ``None``)."""
    start = 0 if after is None else after + 1
    source = numbered_events(client.temporal, workflow_id, from_offset=start, strict=True)
    async for item in buffered(source):
        yield ": keep-alive\n\n" if item is None else event_frame(*item)


async def reply(
    client: AgentClient, session_id: str, start: int, sending: Awaitable[Any]
) -> AsyncIterator[str]:
    """A send's run as it happens: the session's events from offset ``start`` until
    the run that answers the message has finished, then a ``result`` event with
    its ``RunResult`` (or an ``error`` event with the problem)."""
    send = asyncio.ensure_future(sending)
    events = buffered(numbered_events(client.temporal, session_id, from_offset=start))
    finished: set[str] = set()
    following: asyncio.Future[Any] | None = None
    grace: float | None = None  # after the send returned: how long to wait for its run's end
    try:
        while not _answered(send, finished):
            following = following or asyncio.ensure_future(anext(events))
            waits: set[asyncio.Future[Any]] = {following} if send.done() else {following, send}
            done, _ = await asyncio.wait(waits, timeout=grace, return_when="FIRST_COMPLETED")
            if send.done() and grace is None:
                grace = FINISH_GRACE
            if following not in done:
                if not done:
                    break  # the run's end never showed (an older session type)
                continue
            try:
                item = following.result()
            except StopAsyncIteration:  # the session closed
                following = None
                break
            following = None
            if item is None:
                yield ": keep-alive\n\n"
                continue
            yield event_frame(*item)
            if isinstance(item[1], RunFinished):
                finished.add(item[1].run_id)
        try:
            result = await send
        except Exception as e:  # noqa: BLE001 - reported in the stream, as the JSON API would
            yield frame("error", json.loads(bytes(for_exception(e).body)))
            return
        yield frame("result", result_json(result))
    finally:
        send.cancel()
        if following is not None:  # a read still in flight: stop it before closing
            following.cancel()
            await asyncio.gather(following, return_exceptions=True)
        await events.aclose()


def _answered(send: asyncio.Future[Any], finished: set[str]) -> bool:
    if not send.done():
        return False
    return send.exception() is not None or send.result().workflow_id in finished
