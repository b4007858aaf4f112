"""Timeouts and retry policies, named in one place."""

from __future__ import annotations

from datetime import timedelta

from temporalio.common import RetryPolicy

from ratchet.wire import RunOptions


def retry_policy(options: RunOptions, max_attempts: int | None = None) -> RetryPolicy:
    """A turn's or a tool's retries: ``max_attempts`` (a tool's own) or the run's."""
    return RetryPolicy(
        initial_interval=options.initial_retry_interval,
        backoff_coefficient=2.0,
        maximum_interval=timedelta(minutes=1),
        maximum_attempts=max_attempts if max_attempts is not None else options.max_attempts,
    )


def spoken(value: timedelta | None) -> str:
    """A timeout as people read it: ``10 min``, ``24 h``, ``90 s``, ``ever``."""
    if value is None:
        return "ever"
    seconds = int(value.total_seconds())
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    if seconds % 60 == 0:
        return f"{seconds // 60} min"
    return f"{value.total_seconds():g} s"
