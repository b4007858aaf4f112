"""Acknowledged heartbeats: how a turn makes its checkpoints durable, proves it is
still the current attempt and stays alive.

Every heartbeat replaces the details the server holds, so one that reaches the
server after a newer one erases the steps the newer one saved. The SDK's
``activity.heartbeat()`` is fire-and-forget and throttled (to 0.8 of the heartbeat
timeout): one handed to it can arrive seconds after a later one of the turn's own.
So a turn sends its heartbeats itself, through the activity's task token, one at a
time (the next waits until the server has answered the last, even if the caller of
the last stopped waiting), each carrying every step recorded so far:

- ``write()`` returns once the server holds every step recorded before the call;
- ``confirm()`` returns once the server has said, recently, that this attempt is
  still current. The server answers "not found" for an attempt it has timed out or
  replaced: ``StaleAttemptError``. A heartbeat acknowledged less than ``fresh``
  seconds ago counts: the server cannot time the attempt out within its heartbeat
  timeout of that heartbeat, and ``fresh`` is a third of it at most;
- ``keep_alive()`` sends one whenever none has been acknowledged for ``interval``
  (0.6 of the heartbeat timeout: 1.8 s at the default 3 s), the task's start
  counting as the first. The answers bring cancellation (``TurnCancelled``) and
  "not found".

The worker's core still needs the SDK's heartbeats: it cancels an attempt that has
had none of them acknowledged for the heartbeat timeout plus 5 s. So once one of the
turn's own heartbeats has been acknowledged, the SDK is handed one whenever its last
is a heartbeat timeout old (``sdk_every``), just before one of the turn's own and
with the same details, every step recorded by then. The core sends it at once (its
throttle has lapsed), beside the turn's own, and no newer heartbeat starts before
that one is answered. With no steps in between that is every other liveness
heartbeat, 1.2 of the timeout apart (at most the timeout plus ``SDK_SLACK``): about
50 heartbeat requests a minute at the default. The SDK's report of a failed or
cancelled attempt carries the details it was handed last, so it is handed every
recorded step first (``hand_over()``).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import time
from collections.abc import Callable, Coroutine
from datetime import timedelta
from typing import Any

from temporalio import activity
from temporalio.client import AsyncActivityCancelledError, AsyncActivityHandle
from temporalio.service import RPCError, RPCStatusCode

from ratchet.errors import StaleAttemptError

LIVENESS_FRACTION = 0.6
"""A turn heartbeats when none has been acknowledged for this fraction of the
heartbeat timeout."""
DEFAULT_LIVENESS = 2.0
"""Seconds between liveness heartbeats when the turn has no heartbeat timeout."""
MAX_FRESH = 1.0
"""An acknowledgement proves the attempt current for at most this many seconds."""
SDK_SLACK = 2.0
"""Seconds past the heartbeat timeout by which the SDK is handed its next heartbeat at
the latest (the worker's core allows 5)."""


def stale_message(describe: str, before: str, cause: str) -> str:
    """What a worker logs when the server no longer knows one of its attempts."""
    what = f" before {before}" if before else ""
    return (
        f"{describe} stopped{what}: the server no longer knows this attempt ({cause}). "
        "It timed the attempt out (its worker missed heartbeats) or the run ended; "
        "another attempt takes or took the turn."
    )


class TurnCancelled(Exception):
    """The server asked this attempt to stop (the run was cancelled, or the
    activity paused or reset); the turn reports its cancellation and ends."""


class Heartbeats:
    """The one heartbeat sender of a turn attempt."""

    def __init__(
        self,
        handle: AsyncActivityHandle,
        heartbeat_timeout: timedelta | None,
        details: Callable[[], Any],
        *,
        describe: str = "this turn",
    ) -> None:
        self._handle = handle
        self._details = details
        self._describe = describe
        timeout = heartbeat_timeout.total_seconds() if heartbeat_timeout else None
        self.interval = timeout * LIVENESS_FRACTION if timeout else DEFAULT_LIVENESS
        self.fresh = min(MAX_FRESH, timeout / 3) if timeout else MAX_FRESH
        self.sdk_every = timeout
        """Seconds between heartbeats handed to the SDK; ``None``: the core keeps no
        heartbeat timer, and the SDK is handed none."""
        self._lock = asyncio.Lock()
        self._version = 0  # bumped by every recorded step
        self._acked_version = 0
        # The server handed this attempt its task just now: as good as an acknowledgement.
        self._acked_at = time.monotonic()
        self._written = False  # none of this attempt's heartbeats acknowledged yet
        self._sdk_at = self._acked_at  # the core's timer starts with the task
        self._sdk_handed = False

    def changed(self) -> None:
        """The details have new steps that the next heartbeat must carry."""
        self._version += 1

    async def write(self) -> None:
        """Return once the server has acknowledged every step recorded so far."""
        target = self._version
        await self._when(lambda: self._acked_version < target)

    async def confirm(self, before: str) -> None:
        """Return once the server has confirmed, within ``fresh`` seconds, that this
        attempt is current (and holds every step recorded so far); ``before`` names
        the work about to start, for the error if it is not."""
        asked = time.monotonic()
        target = self._version

        def needed() -> bool:
            return self._acked_version < target or self._acked_at < asked - self.fresh

        await self._when(needed, before)

    async def keep_alive(self) -> None:
        """Heartbeat whenever one is due; runs until cancelled."""
        while True:
            await asyncio.sleep(max(0.0, self._due() - time.monotonic()))
            try:
                await _answered(self._exclusive(lambda: time.monotonic() >= self._due()))
            except RPCError as e:  # the client has retried it already
                activity.logger.warning("%s: a heartbeat failed (%s)", self._describe, e)
                await asyncio.sleep(self.interval)

    def hand_over(self) -> None:
        """Hand the SDK every step recorded so far (and why this attempt failed): its
        report of this attempt's failure or cancellation carries the details it was
        handed last, and the next attempt reads them."""
        activity.heartbeat(copy.copy(self._details()))

    def _due(self) -> float:
        """When the next liveness heartbeat is due (monotonic seconds). The task's
        start counts as the first acknowledgement: a turn shorter than ``interval``
        that records no step sends no heartbeat at all."""
        due = self._acked_at + self.interval
        if not self._written:
            return due
        if self.sdk_every is not None:
            due = min(due, self._sdk_at + self.sdk_every + SDK_SLACK)
        return due

    async def _when(self, needed: Callable[[], bool], before: str = "") -> None:
        """Send a heartbeat if ``needed`` holds once none is in flight (none when it
        does not hold now, and none is: most checks before a step)."""
        if self._lock.locked() or needed():
            await _answered(self._exclusive(needed, before))

    async def _exclusive(self, needed: Callable[[], bool], before: str = "") -> None:
        async with self._lock:
            if needed():
                await self._send(before)

    async def _send(self, before: str) -> None:
        version = self._version
        details = copy.copy(self._details())
        started = time.monotonic()
        if self._written and self.sdk_every is not None:
            if started >= self._sdk_at + self.sdk_every:
                activity.heartbeat(details)
                self._sdk_at = started
                self._sdk_handed = True
                await asyncio.sleep(0)  # the SDK's task hands it to the core first
        try:
            await self._handle.heartbeat(details)
        except AsyncActivityCancelledError as e:
            raise TurnCancelled(str(e.details or "cancelled")) from e
        except RPCError as e:
            if e.status != RPCStatusCode.NOT_FOUND:
                raise
            raise StaleAttemptError(stale_message(self._describe, before, e.message)) from e
        self._acked_version = version
        self._acked_at = started
        self._written = True


async def _answered(send: Coroutine[Any, Any, None]) -> None:
    """Await ``send`` in a task of its own: a caller that stops waiting leaves it to
    finish, holding the lock until its request is answered (an abandoned request
    could still reach the server after a newer heartbeat)."""
    task = asyncio.ensure_future(send)
    task.add_done_callback(_retrieve)
    await asyncio.shield(task)


def _retrieve(task: asyncio.Future[None]) -> None:
    with contextlib.suppress(BaseException):
        task.exception()  # nobody may be waiting for it any more
