"""A turn's attempts, counted as Ratchet counts them: a provider's throttling (429,
529) is a wait, not a failure. When the workflow schedules the turn with no limit
at Temporal's level (``TurnInput.max_attempts`` set), the turn fails itself once
its real failures reach the run's ``max_attempts``, and gives up waiting once the
provider has imposed more than its ``turn_timeout`` of throttling: the throttled
attempts' own run time plus the waits the provider asked for (not the time a retry
then waits in the task queue behind its rate limit)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from ratchet.errors import ModelError
from ratchet.wire import ATTEMPTS_KEY, THROTTLED, TurnInput

THROTTLE_STATUSES = frozenset({429, 529})
"""Too many requests (OpenAI and others), overloaded (Anthropic)."""
UNSAID_WAIT = 1.0
"""Seconds a throttle without a ``retry-after`` counts as imposed (Temporal's retry
policy sets its real delay)."""
MESSAGE_CHARS = 500
"""Characters of the provider's message a throttle's failure keeps."""


def throttle_of(error: BaseException) -> str | None:
    """``429, retry-after 2s`` when ``error`` is a provider throttling the call."""
    if not isinstance(error, ModelError) or not error.retryable:
        return None
    if error.status not in THROTTLE_STATUSES:
        return None
    after = f", retry-after {error.retry_after:g}s" if error.retry_after is not None else ""
    return f"{error.status}{after}"


def earlier_attempts(info: activity.Info) -> list[dict[str, Any]]:
    """The records of the attempts before this one that reached the server."""
    details = info.heartbeat_details
    found = details[0].get(ATTEMPTS_KEY) if details and isinstance(details[0], dict) else None
    return list(found) if isinstance(found, list) else []


def real_failures(attempt: int, earlier: Sequence[dict[str, Any]]) -> int:
    """Attempts before ``attempt`` that failed for real: all but the throttled ones
    (an attempt lost with its worker left no record, and counts)."""
    return attempt - 1 - sum(1 for a in earlier if a.get("throttled"))


def imposed(error: ModelError, started: datetime, now: datetime) -> float:
    """Seconds a throttled attempt counts: its own run time plus the wait the provider
    asked for (``UNSAID_WAIT`` when it named none)."""
    wait = error.retry_after if error.retry_after is not None else UNSAID_WAIT
    return (now - started).total_seconds() + wait


def throttled_for(earlier: Sequence[dict[str, Any]]) -> float:
    """Seconds the provider imposed on the attempts before this one, as each throttled
    one recorded (``throttled_s``; ``UNSAID_WAIT`` for a record without it)."""
    return sum(float(a.get("throttled_s", UNSAID_WAIT)) for a in earlier if a.get("throttled"))


def limit_reached(input: TurnInput, info: activity.Info) -> str | None:
    """Why the turn must not try again after this attempt fails for real, if so."""
    limit = input.max_attempts
    if not limit or info.is_local:
        return None
    failed = real_failures(info.attempt, earlier_attempts(info)) + 1
    return f"{failed} failed attempt(s), max_attempts={limit}" if failed >= limit else None


def spent_before(input: TurnInput, info: activity.Info) -> str | None:
    """Why the turn must not start this attempt: its real failures reached the limit
    already (the last one lost with its worker, so it could not say so)."""
    limit = input.max_attempts
    if not limit or info.is_local or real_failures(info.attempt, earlier_attempts(info)) < limit:
        return None
    return (
        f"Turn {input.turn} of agent {input.agent!r} failed {limit} attempt(s) "
        f"(max_attempts={limit}); the last one timed out or its worker was lost."
    )


def throttled_error(error: ModelError, throttle: str, input: TurnInput) -> ApplicationError:
    """The failure that retries a throttled attempt after the provider's delay; or,
    once the turn has spent its ``turn_timeout`` throttled, the one that fails it."""
    info = activity.info()
    delay = timedelta(seconds=error.retry_after) if error.retry_after is not None else None
    if input.max_attempts is None or info.is_local:  # Temporal counts the attempts
        return ApplicationError(
            str(error), type=type(error).__name__, non_retryable=False, next_retry_delay=delay
        )
    bound = info.start_to_close_timeout
    earlier = earlier_attempts(info)
    now = datetime.now(info.started_time.tzinfo)
    spent = throttled_for(earlier) + imposed(error, info.started_time, now)
    if bound is not None and spent > bound.total_seconds():
        count = 1 + sum(1 for a in earlier if a.get("throttled"))
        return ApplicationError(
            f"The model's provider throttled turn {input.turn} of agent {input.agent!r} "
            f"{count} time(s), for {spent:.1f}s in all (the attempts' run time and the "
            f"waits it asked for), more than its turn_timeout ({bound.total_seconds():g}s); "
            f"last: {_short(error)}",
            type=type(error).__name__,
            non_retryable=True,
        )
    return ApplicationError(  # benign: the SDK logs it at DEBUG, as no failure
        f"throttled ({throttle}): {_short(error)}",
        type=THROTTLED,
        next_retry_delay=delay,
        category=ApplicationErrorCategory.BENIGN,
    )


def _short(error: ModelError) -> str:
    text = str(error)
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1] + "…"
