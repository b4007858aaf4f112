"""How a run fails: the errors it raises and how it reads the failures of the
activities and child workflows it waits for."""

from __future__ import annotations

import asyncio

from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError, FailureError


def run_failure(kind: str, message: str) -> ApplicationError:
    """The error that fails a run: not retried (a retried workflow task would fail
    the same way), typed so the client raises the matching Ratchet error."""
    return ApplicationError(message, type=kind, non_retryable=True)


def turn_failure(error: BaseException) -> tuple[str, str]:
    """The type and message of a turn's failure. A local activity's failure (fast
    mode) may arrive unwrapped."""
    cause = error.cause if isinstance(error, ActivityError) else error
    message = cause.message if isinstance(cause, FailureError) else str(error)
    kind = cause.type if isinstance(cause, ApplicationError) else type(cause).__name__
    return kind or "TurnFailed", message


def failure_text(error: BaseException) -> str:
    """The innermost message of an activity or child workflow failure."""
    cause: BaseException | None = error
    while isinstance(cause, ActivityError | ChildWorkflowError) and cause.cause is not None:
        cause = cause.cause
    if isinstance(cause, FailureError):
        return cause.message
    return str(cause)


def first_application_error(error: BaseException) -> BaseException:
    """The outermost ApplicationError in ``error``'s chain of causes (the one with
    the most context), else the deepest cause."""
    while not isinstance(error, ApplicationError) and error.__cause__ is not None:
        error = error.__cause__
    return error


def root_cause(error: BaseException) -> BaseException:
    while error.__cause__ is not None:
        error = error.__cause__
    return error


async def cancelled(task: asyncio.Future) -> None:
    """Cancel ``task`` and wait until it has ended, however it ends."""
    task.cancel()
    try:
        await task
    except (asyncio.CancelledError, ActivityError, ApplicationError):
        pass
