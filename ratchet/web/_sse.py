"""Server-Sent Events: a session's or run's events, each with its stream offset as
its SSE ``id``, so ``Last-Event-ID`` resumes exactly after it on any replica.

Streams read from the process's ``Hub`` (one subscription per session, a bounded
queue per reader). A comment line after ``KEEPALIVE`` quiet seconds keeps
proxies from closing an idle stream.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable
from typing import Any

from ratchet.client import SessionHandle
from ratchet.errors import InvalidInputError
from ratchet.types import RunEvent
from ratchet.wire import RunResult

from ._bodies import full
from ._hub import Hub
from ._problems import for_exception

FINISH_GRACE = 10.0


def frame(kind: str, data: Any, event_id: int | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def event_id(value: str | None) -> int | None:
    """A ``Last-Event-ID`` header as the stream offset it names."""
    if value is None:
        return None
    if not value.strip().lstrip("-").isdigit():
        raise InvalidInputError(f"Last-Event-ID {value!r} is not an event id from here.")
    return int(value)


def result_json(result: RunResult) -> dict[str, Any]:
    """A run's result as the API returns it: ``output`` is the answer's JSON value
    when it is JSON (a typed answer: an object for a model or dataclass), else its
    text, as ``ratchet run --json`` prints it; ``final_response`` holds the text."""
    return {**full(result), "output": result.output_value}


def event_frame(offset: int, event: RunEvent) -> str:
    return frame(event.kind, full(event), offset)


async def follow(hub: Hub, workflow_id: str, after: int | None) -> AsyncIterator[str]:
    """Every event of ``workflow_id`` after offset ``after`` (all when ``None``)."""
    start, started = 0 if after is None else after + 1, False
    try:
        async for item in hub.watch(workflow_id, start):
            started = True
            yield ": keep-alive\n\n" if item is None else event_frame(*item)
    except Exception as e:
        if not started:
            raise  # an answer of its own (a 410, a 503)
        # The stream ends with the problem; the client resumes with its last id.
        yield frame("error", json.loads(bytes(for_exception(e).body)))


async def reply(
    hub: Hub, session: SessionHandle, start: int, sending: Awaitable[RunResult]
) -> AsyncIterator[str]:
    """A send's run as it happens: the session's events from offset ``start`` until
    the send has returned and every event the session held then is out, then a
    ``result`` event with its ``RunResult`` (or an ``error`` event with the problem)."""
    joined = asyncio.Event()
    events = hub.watch(session.id, start, joined=joined)
    reading: asyncio.Future[Any] = asyncio.ensure_future(anext(events))
    send: asyncio.Future[RunResult] | None = None
    end: int | None = None  # the stream's end once the send returned: read up to it
    last = start - 1
    try:
        joining = asyncio.ensure_future(joined.wait())
        await asyncio.wait({reading, joining}, return_when=asyncio.FIRST_COMPLETED)
        joining.cancel()
        send = asyncio.ensure_future(sending)  # after joining: the feed sees it all
        hub.poke(session.id)
        while end is None or last < end - 1:
            waits = {reading, send} if end is None else {reading}
            done, _ = await asyncio.wait(
                waits,
                timeout=FINISH_GRACE if end is not None else None,
                return_when=asyncio.FIRST_COMPLETED,
            )
            if not done:
                break  # the stream never reached the end (it was cut short)
            if send in done and end is None:
                if send.exception() is not None:
                    break
                end = await session.event_offset()
            if reading not in done:
                continue
            try:
                item = reading.result()
            except StopAsyncIteration:  # the session closed
                break
            reading = asyncio.ensure_future(anext(events))
            if item is None:
                yield ": keep-alive\n\n"
                continue
            last = item[0]
            yield event_frame(*item)
        try:
            result = await send
        except Exception as e:  # noqa: BLE001 - reported in the stream, as the JSON API would
            yield frame("error", json.loads(bytes(for_exception(e).body)))
            return
        yield frame("result", result_json(result))
    finally:
        if send is None:  # never sent (the client left first)
            asyncio.ensure_future(sending).cancel()
        else:
            send.cancel()
        reading.cancel()
        await asyncio.gather(reading, return_exceptions=True)
        await events.aclose()
