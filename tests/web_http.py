"""Talking to a ``ratchet web`` process in tests: tokens, the server handle, SSE
frames, problem+json checks. The fixtures that start one are in conftest.py."""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx2 as httpx

from ratchet.testing import ChildProcess

ALICE, BOB = secrets.token_urlsafe(), secrets.token_urlsafe()
OPS = secrets.token_urlsafe()
"""The token of ``ops``, an operator (sees and decides every session)."""
APP_ORIGIN = "http://app.example"
PROBLEM = "application/problem+json"


@dataclass
class Web:
    url: str
    process: ChildProcess

    def client(self, token: str | None = ALICE, **headers: str) -> httpx.AsyncClient:
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=60)


def problem_of(response: httpx.Response, status: int, kind: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    body = response.json()
    assert (body["status"], body["type"]) == (status, kind), body
    assert "Traceback" not in response.text and body["detail"]
    return body


async def sse(response: httpx.Response) -> AsyncIterator[tuple[int | None, str, Any]]:
    """(id, event, data) for each frame of an SSE response."""
    fields: dict[str, str] = {}
    async for line in response.aiter_lines():
        if line == "":
            if "event" in fields:
                event_id = int(fields["id"]) if "id" in fields else None
                yield event_id, fields["event"], json.loads(fields["data"])
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(": ")
            fields[name] = value


async def new_session(http: httpx.AsyncClient, agent: str, **body: Any) -> str:
    response = await http.post("/v1/sessions", json={"agent": agent, **body})
    assert response.status_code == 201, response.text
    return response.json()["id"]


async def until_status(http: httpx.AsyncClient, session: str, status: str) -> None:
    """Follows the session's events until its run's status is ``status``."""
    async with http.stream("GET", f"/v1/sessions/{session}/events") as events:
        async for _, kind, data in sse(events):
            if kind == "status" and data.get("text") == status:
                return
