"""Timeouts and retry policies, named in one place."""

from __future__ import annotations

from datetime import timedelta

from temporalio.common import RetryPolicy

from ratchet.wire.options import RunOptions


def tool_retry_policy(options: RunOptions, max_attempts: int | None) -> RetryPolicy:
    return RetryPolicy(
        initial_interval=options.initial_retry_interval,
        backoff_coefficient=2.0,
        maximum_interval=timedelta(minutes=1),
        maximum_attempts=max_attempts if max_attempts is not None else options.max_attempts,
    )


def turn_retry_policy(options: RunOptions) -> RetryPolicy:
    return RetryPolicy(
        initial_interval=options.initial_retry_interval,
        backoff_coefficient=2.0,
        maximum_interval=timedelta(minutes=1),
        maximum_attempts=options.max_attempts,
    )
