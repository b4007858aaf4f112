"""How errors become ``application/problem+json`` answers (no server needed)."""

from __future__ import annotations

import json

import pytest
from temporalio.service import RPCError, RPCStatusCode

from ratchet.errors import SessionBusyError
from ratchet.web._auth import AuthError
from ratchet.web._jwt import TokenRejected
from ratchet.web._problems import for_exception


def body(response) -> dict:
    return json.loads(bytes(response.body))


@pytest.mark.parametrize(
    "status",
    [RPCStatusCode.RESOURCE_EXHAUSTED, RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED],
)
def test_temporal_busy_or_away_is_a_503_to_retry(status: RPCStatusCode):
    response = for_exception(RPCError("namespace concurrent poller limit exceeded", status, b""))
    assert response.status_code == 503 and response.headers["Retry-After"] == "1"
    problem = body(response)
    assert problem["type"] == "TemporalUnavailable"
    assert "namespace concurrent poller limit exceeded" in problem["detail"]


def test_a_query_no_worker_answers_is_a_503_naming_the_missing_worker():
    """GET /v1/sessions/{id} while no worker polls the session's queue was a 500."""
    message = "no poller seen for task queue recently, worker may be down"
    response = for_exception(RPCError(message, RPCStatusCode.FAILED_PRECONDITION, b""))
    assert response.status_code == 503 and response.headers["Retry-After"] == "5"
    problem = body(response)
    assert problem["type"] == "NoWorker" and "ratchet worker" in problem["detail"]


def test_other_temporal_errors_stay_internal_and_say_nothing_of_it():
    response = for_exception(RPCError("secret detail", RPCStatusCode.INTERNAL, b""))
    assert response.status_code == 500 and "secret" not in json.dumps(body(response))


def test_a_ratchet_error_keeps_its_status_and_class():
    response = for_exception(SessionBusyError("s", "a run is in progress"))
    assert response.status_code == 409 and body(response)["type"] == "SessionBusyError"


def test_a_401_challenges_for_a_bearer_token_and_a_refused_jwt_says_why_in_fixed_words():
    missing = for_exception(AuthError("No credentials: send 'Authorization: Bearer <token>'."))
    assert missing.status_code == 401 and missing.headers["WWW-Authenticate"] == "Bearer"
    assert "reason" not in body(missing)
    expired = for_exception(TokenRejected("expired", 'The token has expired "\\ at 12:00.'))
    assert body(expired)["reason"] == "expired" and body(expired)["type"] == "AuthError"
    assert expired.headers["WWW-Authenticate"] == (
        'Bearer error="invalid_token", error_description="The token has expired"'
    )
