"""Acknowledged heartbeats: how a turn makes its checkpoints durable and proves it
is still the current attempt.

The SDK's ``activity.heartbeat()`` is fire-and-forget and throttled (to 0.8 of the
heartbeat timeout), so a step it carries may not have reached the server when the
worker dies. A turn sends its own heartbeats instead, through the activity's task
token, one at a time, each carrying every step recorded so far, and waits for the
server's answer:

- ``write()`` returns once the server holds every step recorded before the call;
- ``confirm()`` returns once the server has said, recently, that this attempt is
  still current. The server answers "not found" for an attempt it has timed out or
  replaced: ``StaleAttemptError``. A heartbeat acknowledged less than ``fresh``
  seconds ago counts: the server cannot time the attempt out within its heartbeat
  timeout of that heartbeat, and ``fresh`` is a third of it at most.

Liveness stays with the SDK (``keep_alive``): the worker's core cancels an attempt
whose code has not heartbeated through it for a while, and delivers cancellation
in its heartbeats' answers. Those heartbeats carry only details the server has
already acknowledged, so they never hold a step back; they would replace newer
details only if one were still in flight when an acknowledged one overtook it
(milliseconds), and the next one, within 0.8 of the heartbeat timeout, carries
the newest again.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from temporalio import activity
from temporalio.client import AsyncActivityCancelledError, AsyncActivityHandle
from temporalio.service import RPCError, RPCStatusCode

from ratchet.errors import StaleAttemptError

LIVENESS_FRACTION = 0.3
"""The SDK is handed a liveness heartbeat every ``heartbeat_timeout * LIVENESS_FRACTION``
(it sends at most one per 0.8 of the timeout)."""
DEFAULT_LIVENESS = 2.0
"""Seconds between liveness heartbeats when the turn has no heartbeat timeout."""
MAX_FRESH = 1.0
"""An acknowledgement proves the attempt current for at most this many seconds."""


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
        self._lock = asyncio.Lock()
        self._version = 0  # bumped by every recorded step
        self._acked_version = 0
        self._acked: Any = copy.copy(details())
        # The server handed this attempt its task just now: as good as an acknowledgement.
        self._acked_at = time.monotonic()

    def changed(self) -> None:
        """The details have new steps that the next heartbeat must carry."""
        self._version += 1

    async def write(self) -> None:
        """Return once the server has acknowledged every step recorded so far."""
        target = self._version
        async with self._lock:
            if self._acked_version >= target:
                return
            await self._send()

    async def confirm(self, before: str) -> None:
        """Return once the server has confirmed, within ``fresh`` seconds, that this
        attempt is current (and holds every step recorded so far); ``before`` names
        the work about to start, for the error if it is not."""
        asked = time.monotonic()
        target = self._version
        async with self._lock:
            if self._acked_version >= target and self._acked_at >= asked - self.fresh:
                return
            await self._send(before)

    async def keep_alive(self) -> None:
        """Hand the SDK a heartbeat every ``interval`` seconds; runs until cancelled."""
        while True:
            activity.heartbeat(self._acked)
            await asyncio.sleep(self.interval)

    async def _send(self, before: str = "") -> None:
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
        self._acked = details
        activity.heartbeat(details)  # the SDK's next liveness heartbeat carries them
