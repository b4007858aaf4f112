"""Errors as ``application/problem+json`` (RFC 9457): ``type`` is the Ratchet error
class, ``title`` what happened, ``detail`` the message that says what to fix.
Never a traceback."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from temporalio.service import RPCError, RPCStatusCode

from ratchet import errors
from ratchet.client import no_worker_yet

from ._auth import AuthError
from ._jwks import IssuerUnavailable

log = logging.getLogger("ratchet.web")
PROBLEM = "application/problem+json"

BUSY = (
    RPCStatusCode.RESOURCE_EXHAUSTED,
    RPCStatusCode.UNAVAILABLE,
    RPCStatusCode.DEADLINE_EXCEEDED,
)
"""Temporal errors that pass: 503 with Retry-After (a feed retries them itself)."""

# Most specific first: a send refused because the session is busy is both
# RunFailedError and SessionBusyError, and answers 409.
STATUS: list[tuple[type[Exception], int, str]] = [
    (errors.PayloadTooLargeError, 413, "Payload too large"),
    (errors.SessionBusyError, 409, "The session is busy"),
    (errors.SessionClosedError, 409, "The session is closed"),
    (errors.DecisionError, 409, "Nothing waits for that decision"),
    (errors.ConversationConflictError, 409, "The history does not match the session's"),
    (errors.RequestExpiredError, 409, "That request id is older than the session remembers"),
    (errors.ResultExpiredError, 410, "The result is no longer held"),
    (errors.AlreadyStartedError, 409, "That id is in use"),
    (errors.SessionHasForksError, 409, "Forks read from this session"),
    (errors.DeletionIncompleteError, 503, "The deletion is not finished: delete again"),
    (errors.EventsExpiredError, 410, "Those events are no longer retained"),
    (errors.EventsUnavailableError, 503, "The events could not be read for a while"),
    (errors.ClosedRunUnreadableError, 503, "No worker can read that closed run"),
    (errors.AgentNotFoundError, 404, "No such agent"),
    (errors.NotFoundError, 404, "Not found"),
    (errors.InvalidInputError, 422, "Invalid input"),
    (errors.InvalidOptionsError, 422, "Invalid options"),
    (errors.RunFailedError, 422, "The run failed"),
    (errors.UsageError, 400, "Bad request"),
    (errors.RunError, 422, "The run could not finish"),
]


class Forbidden(Exception):
    """Credentials are fine, the request is not allowed (HTTP 403)."""


class Gone(Exception):
    """HTTP 410 with a body (the snapshot to restart from)."""

    def __init__(self, cause: errors.EventsExpiredError, snapshot: dict[str, Any]) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.snapshot = snapshot


def problem(status: int, kind: str, title: str, detail: str, **extra: Any) -> JSONResponse:
    body = {"type": kind, "title": title, "status": status, "detail": detail, **extra}
    return JSONResponse(body, status_code=status, media_type=PROBLEM)


def unauthorized(error: AuthError) -> JSONResponse:
    """401, with the reason a bearer token was refused (RFC 6750's ``invalid_token``)."""
    reason = getattr(error, "reason", None)
    if reason is None:
        response = problem(401, type(error).__name__, "Not authenticated", str(error))
        response.headers["WWW-Authenticate"] = "Bearer"
        return response
    response = problem(401, "AuthError", "Not authenticated", str(error), reason=reason)
    description = getattr(error, "description", reason)  # fixed text: nothing of the token
    response.headers["WWW-Authenticate"] = (
        f'Bearer error="invalid_token", error_description="{description}"'
    )
    return response


def for_exception(error: Exception) -> JSONResponse:
    """The response for ``error`` (a 500 without details for anything unexpected)."""
    if isinstance(error, AuthError):
        return unauthorized(error)
    if isinstance(error, IssuerUnavailable):
        response = problem(
            503, "IssuerUnavailable", "The sign-in keys are out of reach", str(error)
        )
        response.headers["Retry-After"] = "5"
        return response
    if isinstance(error, Gone):
        return problem(
            410,
            type(error.cause).__name__,
            "Those events are no longer retained",
            str(error.cause),
            oldest=error.cause.oldest,
            snapshot=error.snapshot,
        )
    if isinstance(error, Forbidden):
        return problem(403, "Forbidden", "Not allowed", str(error))
    if isinstance(error, errors.AnswerUnavailableError):
        response = problem(
            503,
            "AnswerUnavailableError",
            "The answer could not be read now",
            str(error),
            request_id=error.request_id,
            taken=error.taken,
        )
        response.headers["Retry-After"] = "1"
        return response
    if isinstance(error, RPCError) and no_worker_yet(error):
        response = problem(
            503,
            "NoWorker",
            "No worker answers",
            f"{error.message}: no worker polls this session's task queue. Start one "
            "(ratchet worker --agents ...); nothing was lost, try again once it runs.",
        )
        response.headers["Retry-After"] = "5"
        return response
    if isinstance(error, RPCError) and error.status in BUSY:
        response = problem(
            503,
            "TemporalUnavailable",
            "Temporal is busy or out of reach",
            f"{error.message}. Nothing was lost; try again in a moment.",
        )
        response.headers["Retry-After"] = "1"
        return response
    for cls, status, title in STATUS:
        if isinstance(error, cls):
            kind = getattr(error, "error_type", None) or type(error).__name__
            return problem(status, kind, title, str(error))
    log.exception("unexpected error", exc_info=error)
    return problem(500, "InternalError", "Internal error", "The server failed; see its log.")


async def handle(_: Request, error: Exception) -> JSONResponse:
    return for_exception(error)


async def handle_validation(_: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, RequestValidationError)
    where = [
        {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
        for e in error.errors()
    ]
    detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in where)
    return problem(422, "InvalidInputError", "Invalid input", detail, errors=where)
