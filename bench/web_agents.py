"""Agents behind ``bench/web.py``: ``ratchet web --agents bench.web_agents:AGENTS`` reads
their names; the bench's worker processes host them.

``ticker`` streams a reply whose tokens carry their emit time (wall clock, so the
bench, on the same machine, measures each token's delay from ``context.emit`` to
its arrival); ``long`` emits numbered events long enough to kill a web server in
the middle; ``writer`` is the tests' 60-word reply (history bytes per reply).
"""

from __future__ import annotations

import asyncio
import time

from ratchet.agents import Agent, Result, RunContext, Thread
from ratchet.types import Message, TextDelta
from tests.web_agents import Writer

TICKER_TOKENS = 20
TICKER_PAUSE = 0.1
LONG_EVENTS = 300
LONG_PAUSE = 1 / 30


def stamps(text: str | None) -> list[float]:
    """The emit times in a (possibly coalesced) ``ticker`` delta's text."""
    return [float(word) for word in (text or "").split()]


class Ticker(Agent):
    """``TICKER_TOKENS`` tokens ``TICKER_PAUSE`` s apart (about 2 s); each token's text
    is its emit time, so a delta that joins several tokens carries each one's."""

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        for _ in range(TICKER_TOKENS):
            await context.emit(TextDelta(text=f"{time.time():.6f} "))
            await asyncio.sleep(TICKER_PAUSE)
        return Result(final_response=Message.assistant(f"{TICKER_TOKENS} tokens"))


class Long(Agent):
    """``LONG_EVENTS`` numbered events, 30 a second (about ten seconds), then answers."""

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        for n in range(LONG_EVENTS):
            await context.emit({"n": n, "t": time.time()})
            await asyncio.sleep(LONG_PAUSE)
        return Result(final_response=Message.assistant(f"{LONG_EVENTS} events"))


AGENTS = {"ticker": Ticker, "long": Long, "writer": Writer}
