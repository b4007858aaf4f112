"""One subscription per workflow per server process, shared by all its watchers.

Every SSE stream of a session (or run) on this process reads from one ``Feed``:
a single reader of the workflow's event stream (by query, so watching writes
nothing to history, and only when its history shows a change: see
``ratchet.client._follow``) that hands each event to every watcher's own bounded queue.
A watcher that joins late first reads what it missed (``from_offset`` up to
where the feed is) with its own catch-up query, then takes the feed's events;
offsets are the stream's, so nothing is lost or repeated at the seam. Both check,
on every poll, that they can still have the next event (``ratchet.client._event_reader``):
one that fell more than 500 events behind across a continue-as-new ends with
``EventsExpiredError`` at the gap, for every watcher of that feed, never a skip.

The feed never waits for a watcher: one that reads nothing while ``BUFFER``
events pile up is dropped (its stream ends; the client reconnects with its last
id), so a stalled browser tab costs the others nothing. The feed stops when the
workflow closes, or ``LINGER`` seconds after its last watcher left if none came
since: a chat's next message opens a new stream, which joins the feed rather than
start following the workflow's history again from its first event (a session
whose history holds a few MB of messages takes a tenth of a second to read).

``watching`` counts the streams of a workflow on this process, catching up or
joined, from when they start to when they end (their client left, or the run
ended): the AG-UI endpoint stops a run nobody follows any more when a new
message comes (see ``agui``). It is this process's count: a stream on another
replica is not in it.

``poke`` tells a session's feed that something was just sent to it, so the feed
queries right away (it matters where the history cannot be followed and the feed
polls on a timer, up to a second apart).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from typing import Any

from temporalio.client import Client
from temporalio.service import RPCError

from ratchet.client import Resent, numbered_events, read_events
from ratchet.errors import EventsUnavailableError
from ratchet.types import RunEvent

from ._problems import BUSY

BUFFER = 1_000
"""Events a watcher may fall behind by before it is disconnected."""
KEEPALIVE = 15.0
"""Seconds without events after which a watcher gets a ``None`` tick."""
HUNG_UP = 10_000
"""Workflows whose streams' early leaving is remembered, the latest."""
LINGER = 30.0
"""Seconds a feed goes on without watchers, for the next one (see above)."""
RETRY_FIRST, RETRY_MAX = 0.5, 10.0
"""Seconds a feed waits before reading again after Temporal said it is busy."""

log = logging.getLogger("ratchet.web")

Item = tuple[int, RunEvent]
_END = object()


class Watcher:
    """One reader's queue; ``dropped`` once it fell ``BUFFER`` events behind."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue(BUFFER)
        self.dropped = False

    def put(self, item: Any) -> bool:
        try:
            self.queue.put_nowait(item)
        except asyncio.QueueFull:
            self.dropped = True
        return not self.dropped


class Feed:
    """The one reader of a workflow's events on this process."""

    def __init__(self, hub: Hub, workflow_id: str, position: int) -> None:
        self.position = position
        """The offset of the next event the feed hands out."""
        self.watchers: set[Watcher] = set()
        self.wake = asyncio.Event()
        self._hub, self._id = hub, workflow_id
        self._idle: asyncio.TimerHandle | None = None
        self._task = asyncio.create_task(self._run(), name=f"ratchet-web-feed:{workflow_id}")

    async def _run(self) -> None:
        resent, pause = Resent(), RETRY_FIRST
        while True:
            events = numbered_events(
                self._hub.client, self._id, from_offset=self.position, wake=self.wake, resent=resent
            )
            try:
                async for offset, event in events:
                    self.position, pause = offset + 1, RETRY_FIRST
                    for watcher in list(self.watchers):
                        if not watcher.put((offset, event)):
                            self.watchers.discard(watcher)
                    await asyncio.sleep(0)  # a poll may bring hundreds: let readers keep up
                self._end(_END)
                return
            except (RPCError, EventsUnavailableError) as e:
                if isinstance(e, RPCError) and e.status not in BUSY:
                    self._end(e)
                    return
                # Temporal is overloaded or out of reach (the reader retried for two
                # minutes already): the watchers keep their streams (and keep-alives)
                # while the feed tries again.
                log.warning("reading %s's events failed (%s); again in %.1f s", self._id, e, pause)
                await asyncio.sleep(pause)
                pause = min(RETRY_MAX, pause * 2)
            except Exception as e:  # noqa: BLE001 - every watcher reports it
                self._end(e)
                return

    def _end(self, last: Any) -> None:
        self._hub.forget(self._id, self)  # before anyone can join a feed that is over
        for watcher in self.watchers:
            watcher.put(last)  # a watcher too far behind to take it reconnects anyway
        self.watchers.clear()

    def join(self, watcher: Watcher) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        self.watchers.add(watcher)

    def leave(self, watcher: Watcher) -> None:
        self.watchers.discard(watcher)
        if not self.watchers and self._idle is None and not self._task.done():
            self._idle = asyncio.get_running_loop().call_later(LINGER, self._stop_if_idle)

    def _stop_if_idle(self) -> None:
        self._idle = None
        if not self.watchers:
            self._hub.forget(self._id, self)
            self._task.cancel()


class Hub:
    """The feeds of one server process, by workflow id."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._feeds: dict[str, Feed] = {}
        self._watching: dict[str, int] = {}
        self._hung_up: dict[str, None] = {}
        self._left: dict[str, asyncio.Event] = {}

    @property
    def subscriptions(self) -> int:
        return len(self._feeds)

    @property
    def watchers(self) -> int:
        return sum(len(feed.watchers) for feed in self._feeds.values())

    def watching(self, workflow_id: str) -> int:
        """The streams of ``workflow_id`` on this process now."""
        return self._watching.get(workflow_id, 0)

    async def unwatched(self, workflow_id: str, within: float) -> bool:
        """Whether nobody on this process watches ``workflow_id``, now or within
        ``within`` seconds (a client that just hung up may be noticed a moment after
        its next request arrives)."""
        deadline = asyncio.get_running_loop().time() + within
        while self.watching(workflow_id):
            left = self._left.setdefault(workflow_id, asyncio.Event())
            try:
                await asyncio.wait_for(left.wait(), deadline - asyncio.get_running_loop().time())
            except TimeoutError:
                return not self.watching(workflow_id)
        return True

    def hang_up(self, workflow_id: str) -> None:
        """A client left a stream of ``workflow_id`` before the run it followed ended."""
        self._hung_up.pop(workflow_id, None)
        self._hung_up[workflow_id] = None
        if len(self._hung_up) > HUNG_UP:
            del self._hung_up[next(iter(self._hung_up))]

    def hung_up(self, workflow_id: str) -> bool:
        """Whether a client left a stream of ``workflow_id`` early since this was last
        asked (this process's latest ``HUNG_UP`` only)."""
        return self._hung_up.pop(workflow_id, 0) is None

    def _count(self, workflow_id: str, change: int) -> None:
        count = self._watching.get(workflow_id, 0) + change
        if count:
            self._watching[workflow_id] = count
            return
        del self._watching[workflow_id]
        if (left := self._left.pop(workflow_id, None)) is not None:
            left.set()

    def forget(self, workflow_id: str, feed: Feed) -> None:
        if self._feeds.get(workflow_id) is feed:
            del self._feeds[workflow_id]

    def poke(self, workflow_id: str) -> None:
        if (feed := self._feeds.get(workflow_id)) is not None:
            feed.wake.set()

    async def watch(
        self,
        workflow_id: str,
        from_offset: int,
        *,
        strict: bool = True,
        joined: asyncio.Event | None = None,
    ) -> AsyncGenerator[Item | None]:
        """The workflow's events from ``from_offset`` on, each with its offset; a
        ``None`` tick once joined if there was nothing to catch up on (so a response
        can start), and after ``KEEPALIVE`` quiet seconds. Ends when the workflow has
        closed, or early when the reader fell ``BUFFER`` events behind. An offset the
        stream can no longer give raises ``EventsExpiredError`` before anything is
        yielded (``strict=False``: it starts at what the stream holds), and so does a
        feed that fell that far behind later, at the gap. ``joined`` is set once the
        reader has caught up and takes the feed's events."""
        watcher, feed, offset = Watcher(), self._feed(workflow_id, from_offset), from_offset
        resent = Resent()  # a batch re-sent by a turn may straddle the seam
        self._count(workflow_id, +1)
        try:
            # Catch up by query to where the feed is, then join it with no await in
            # between, so the seam loses and repeats nothing (the feed may have moved
            # on during a read: read again).
            checked = sent_any = False
            while not (
                checked and offset >= feed.position and self._feeds.get(workflow_id) is feed
            ):
                if not strict and offset >= feed.position and self._feeds.get(workflow_id) is feed:
                    checked = True  # the feed reads from here on itself: nothing to catch up
                    continue
                until = feed.position
                missed = await read_events(
                    self.client, workflow_id, offset, until=until, strict=strict and not checked
                )
                checked = True
                for item in missed:
                    yield item
                sent_any = sent_any or bool(missed)
                for _, event in missed:
                    resent(event)  # remembered, to drop a re-sent copy that comes live
                offset = max(offset, until)
                feed = self._feed(workflow_id, offset)  # a new one if that one ended
            feed.join(watcher)
            if joined is not None:
                joined.set()
            if not sent_any:
                yield None  # nothing missed: a tick now, so the response starts now
            async for item in _drain(watcher):
                if item is None or (item[0] >= from_offset and not resent(item[1])):
                    yield item
        finally:
            feed.leave(watcher)
            self._count(workflow_id, -1)

    def _feed(self, workflow_id: str, position: int) -> Feed:
        feed = self._feeds.get(workflow_id)
        if feed is None:
            feed = self._feeds[workflow_id] = Feed(self, workflow_id, position)
        return feed


async def _drain(watcher: Watcher) -> AsyncGenerator[Item | None]:
    while True:
        if watcher.dropped and watcher.queue.empty():
            return  # fell behind: the client reconnects with its last id
        try:
            item = watcher.queue.get_nowait()  # no suspension while there is a backlog
        except asyncio.QueueEmpty:
            try:
                item = await asyncio.wait_for(watcher.queue.get(), KEEPALIVE)
            except TimeoutError:
                yield None
                continue
        if item is _END:
            return
        if isinstance(item, Exception):
            raise item
        yield item
