"""The request rate limit of the test model servers (``OpenAIServer(rate_limit=)``),
as a provider enforces one: a request beyond it gets 429 with ``retry-after``."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Answer:
    """One request the server answered: when (``time.monotonic()``) and its status."""

    at: float
    status: int


class TokenBucket:
    """At most ``rate`` requests a second, as a token bucket: it holds at most
    ``max(1, rate)`` tokens (one second's worth, so a burst that size passes at
    once), refills at ``rate`` a second, and each request allowed takes one.

    A bucket, not a sliding window, because Temporal's task-queue rate limit is one
    too (with the same one-second burst): a fleet the server holds to ``rate``
    meets a 429 here only when its requests bunch up on the way.
    """

    def __init__(self, rate: float) -> None:
        if not (math.isfinite(rate) and rate > 0):
            raise ValueError(f"rate_limit={rate!r}: give requests per second above 0")
        self.rate = rate
        self.capacity = max(1.0, rate)
        self._tokens = self.capacity
        self._last = time.monotonic()
        self._lock = threading.Lock()

    def take(self) -> float:
        """Take a token: 0.0 if one was there, else the seconds until one will be."""
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self.capacity, self._tokens + (now - self._last) * self.rate)
            self._last = now
            if self._tokens >= 1:
                self._tokens -= 1
                return 0.0
            return (1 - self._tokens) / self.rate


def retry_headers(wait: float) -> dict[str, str]:
    """``retry-after`` in whole seconds (HTTP's form, rounded up) and OpenAI's
    ``retry-after-ms``, which clients read first."""
    return {
        "retry-after": str(max(1, math.ceil(wait))),
        "retry-after-ms": str(max(1, math.ceil(wait * 1000))),
    }
