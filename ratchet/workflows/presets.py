"""Timeouts and retry policies, named in one place."""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel
from temporalio.common import RetryPolicy


class RunOptions(BaseModel):
    """How a run is executed. Every field has a default so old histories decode."""

    max_turns: int = 25
    turn_timeout: timedelta = timedelta(minutes=10)
    """Start-to-close timeout of one turn attempt (a model call and its tools)."""
    heartbeat_timeout: timedelta = timedelta(seconds=10)
    """A turn whose worker stops heartbeating for this long is retried elsewhere."""
    max_attempts: int = 10
    """Attempts per turn before the run fails (0 means unlimited)."""
    initial_retry_interval: timedelta = timedelta(seconds=1)
    task_queue: str | None = None
    """Task queue for the turn activities; default: the workflow's own."""


def turn_retry_policy(options: RunOptions) -> RetryPolicy:
    return RetryPolicy(
        initial_interval=options.initial_retry_interval,
        backoff_coefficient=2.0,
        maximum_interval=timedelta(minutes=1),
        maximum_attempts=options.max_attempts,
    )
