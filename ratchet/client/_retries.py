"""Calls to a session that outlast a moment's outage (client side).

A query needs a worker to answer it, and an Update a worker to take it: while
workers restart, or Temporal is out of reach, such calls fail for a few seconds.
A send's calls retry those failures, with the same request id, for up to
``RETRY_FOR`` seconds; errors that say something about the request itself (a
refusal, a failure, a missing session) are raised at once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from temporalio.client import RPCTimeoutOrCancelledError
from temporalio.service import RPCError, RPCStatusCode

from ratchet.errors import ThreadResolutionError

T = TypeVar("T")

RETRY_FOR = 120.0
"""Seconds a send keeps retrying calls that fail for a moment."""
FIRST_DELAY = 0.1
MAX_DELAY = 2.0

PASSING = frozenset(
    {
        RPCStatusCode.UNAVAILABLE,
        RPCStatusCode.DEADLINE_EXCEEDED,
        RPCStatusCode.CANCELLED,
        RPCStatusCode.RESOURCE_EXHAUSTED,
        RPCStatusCode.ABORTED,
        RPCStatusCode.INTERNAL,
        RPCStatusCode.UNKNOWN,
    }
)


def passing(error: BaseException) -> bool:
    """Whether ``error`` may pass if the call is made again (no worker answered in
    time, Temporal was out of reach): never a refusal or a failure of the request,
    nor the caller being cancelled (see ``cancelled``)."""
    if cancelled():
        return False
    if isinstance(error, (RPCTimeoutOrCancelledError, TimeoutError)):
        return True
    if isinstance(error, RPCError):
        return error.status in PASSING or no_worker_yet(error)
    if isinstance(error, ThreadResolutionError) and error.__cause__ is not None:
        return passing(error.__cause__)
    return False


def no_worker_yet(error: RPCError) -> bool:
    """A query no worker could answer (none polls the task queue), or a continued
    run's first workflow task held back for a moment: both may pass."""
    message = error.message or ""
    return error.status == RPCStatusCode.FAILED_PRECONDITION and (
        "not scheduled yet" in message or "no poller seen" in message
    )


def cancelled() -> bool:
    """The running task is being cancelled (Ctrl-C, a caller's timeout): the SDK
    reports a cancelled Update as ``RPCTimeoutOrCancelledError``, which would read
    as a moment's outage and be retried for minutes."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def retrying(
    call: Callable[[], Awaitable[T]],
    *,
    until: float,
    on_retry: Callable[[Exception, float], None] | None = None,
) -> T:
    """``call()``, again after each failure that may pass, until ``until`` (a
    ``time.monotonic()``); then the last failure is raised (``TimeoutError`` for a
    call still waiting then: an Update no worker takes). ``on_retry`` hears of each
    failure retried, with the delay before the next call. A cancelled caller stops
    at once, cancelled."""
    delay = FIRST_DELAY
    while True:
        try:
            # An Update no worker takes is held by the server for ever: bound it too.
            async with asyncio.timeout(max(0.0, until - time.monotonic())):
                return await call()
        except Exception as e:
            if cancelled():
                raise asyncio.CancelledError() from e
            if not passing(e) or time.monotonic() + delay > until:
                raise
            if on_retry is not None:
                on_retry(e, delay)
        await asyncio.sleep(delay)
        delay = min(MAX_DELAY, delay * 2)


def deadline() -> float:
    return time.monotonic() + RETRY_FOR
