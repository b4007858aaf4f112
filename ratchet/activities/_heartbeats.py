"""Acknowledged heartbeats: how a turn makes its checkpoints durable, proves it is
still the current attempt and stays alive.

Every heartbeat replaces the details the server holds, so one that reaches the
server after a newer one erases the steps the newer one saved. The SDK's
``activity.heartbeat()`` is fire-and-forget and throttled (to 0.8 of the heartbeat
timeout): one handed to it can arrive seconds after a later one of the turn's own.
So a turn sends the heartbeats that must be acknowledged itself, through the
activity's task token, one at a time (the next waits until the server has answered
the last, even if the caller of the last stopped waiting), each carrying every step
recorded so far:

- ``write()`` returns once the server holds every step recorded before the call;
- ``confirm()`` returns once the server has said, recently, that this attempt is
  still current. The server answers "not found" for an attempt it has timed out or
  replaced: ``StaleAttemptError``. A heartbeat acknowledged less than ``fresh``
  seconds ago counts: the server cannot time the attempt out within its heartbeat
  timeout of that heartbeat, and ``fresh`` is a third of it at most;
- ``keep_alive()`` keeps the attempt alive: whenever the server has heard nothing
  from it for ``interval`` (0.8 of the heartbeat timeout: 8 s at the default 10 s),
  the task's start counting as the first heartbeat. So a model call shorter than
  that sends no heartbeat at all, and a longer turn one per 0.8 of the timeout:
  each heartbeat that reaches the server is a billed action. A turn with no
  heartbeat timeout sends none: the server would miss none, and a dead worker's
  turn is retried after its start-to-close timeout.

A liveness heartbeat goes through the SDK (``activity.heartbeat()``), not beside one
of the turn's own: the worker's core needs the SDK's (it cancels an attempt that has
had none acknowledged for the heartbeat timeout plus 5 s), and one request serves
both. The core sends it at once (its throttle, 0.8 of the timeout, has lapsed), with
the same details as a turn's own would carry, every step recorded by then; no newer
heartbeat of the turn's own starts within ``SETTLE`` seconds of it, so it cannot
overtake it. Its answer reaches the SDK: cancellation and "not found" cancel the
activity's task (``activity.cancellation_details()``). When the turn's own
heartbeats keep the server informed, the SDK is still handed one at the latest the
heartbeat timeout plus ``SDK_SLACK`` after its last. The SDK's report of a failed or
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

LIVENESS_FRACTION = 0.8
"""A turn heartbeats when the server has heard none for this fraction of the
heartbeat timeout (the SDK's throttle: no more often than it would)."""
MAX_FRESH = 1.0
"""An acknowledgement proves the attempt current for at most this many seconds."""
SDK_SLACK = 2.0
"""Seconds past the heartbeat timeout by which the SDK is handed its next heartbeat at
the latest (the worker's core allows 5)."""
SETTLE = 1.0
"""Seconds after a liveness heartbeat handed to the SDK before one of the turn's own
may start (the core sends the SDK's at once; it must reach the server first)."""


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
        self.interval = timeout * LIVENESS_FRACTION if timeout else None
        """Seconds of silence before a liveness heartbeat; ``None``: no heartbeat
        timeout, so none (nothing on the server would miss it: a dead worker's turn
        is retried after its start-to-close timeout)."""
        self.fresh = min(MAX_FRESH, timeout / 3) if timeout else MAX_FRESH
        self.sdk_every = timeout
        """The heartbeat timeout; ``None``: the core keeps no heartbeat timer, and the
        SDK is handed no liveness heartbeat."""
        self.settle = min(SETTLE, timeout / 10) if timeout else SETTLE
        self._lock = asyncio.Lock()
        self._version = 0  # bumped by every recorded step
        self._acked_version = 0
        # The server handed this attempt its task just now: as good as an acknowledgement.
        self._acked_at = time.monotonic()
        self._heard_at = self._acked_at  # the server's last news of this attempt
        self._sdk_at = self._acked_at  # the core's timer starts with the task

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
        interval = self.interval
        if interval is None:  # each heartbeat is billed, and none is needed
            await asyncio.Event().wait()
            return
        while True:
            await asyncio.sleep(max(0.0, self._due(interval) - time.monotonic()))
            try:
                await _answered(self._exclusive(self._is_due, liveness=True))
            except RPCError as e:  # the client has retried it already
                activity.logger.warning("%s: a heartbeat failed (%s)", self._describe, e)
                await asyncio.sleep(interval)

    def hand_over(self) -> None:
        """Hand the SDK every step recorded so far (and why this attempt failed): its
        report of this attempt's failure or cancellation carries the details it was
        handed last, and the next attempt reads them."""
        activity.heartbeat(copy.copy(self._details()))

    def _due(self, interval: float) -> float:
        """When the next liveness heartbeat is due (monotonic seconds). The task's
        start counts as the first heartbeat: a turn shorter than ``interval`` that
        records no step sends no heartbeat at all."""
        due = self._heard_at + interval
        if self.sdk_every is not None:
            due = min(due, self._sdk_at + self.sdk_every + SDK_SLACK)
        return due

    def _is_due(self) -> bool:
        return self.interval is not None and time.monotonic() >= self._due(self.interval)

    async def _when(self, needed: Callable[[], bool], before: str = "") -> None:
        """Send a heartbeat if ``needed`` holds once none is in flight (none when it
        does not hold now, and none is: most checks before a step)."""
        if self._lock.locked() or needed():
            await _answered(self._exclusive(needed, before))

    async def _exclusive(
        self, needed: Callable[[], bool], before: str = "", *, liveness: bool = False
    ) -> None:
        async with self._lock:
            if not needed():
                return
            if liveness and self.sdk_every is not None:
                await self._hand_to_sdk()
            else:
                await self._send(before)

    async def _hand_to_sdk(self) -> None:
        """The liveness heartbeat, through the SDK: it keeps the core's timer and the
        server's alike with one request. Holding the lock, wait until it has surely
        left, so that no heartbeat of the turn's own overtakes it."""
        self._sdk_at = self._heard_at = time.monotonic()
        activity.heartbeat(copy.copy(self._details()))
        await asyncio.sleep(self.settle)

    async def _send(self, before: str) -> None:
        version = self._version
        details = copy.copy(self._details())
        started = time.monotonic()
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
        self._heard_at = max(self._heard_at, started)


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
