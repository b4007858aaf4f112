"""Evaluation reports over HTTP (``ratchet web --reports DIR``): listed and read by the
identities allowed to, refused to others, never a path outside the directory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx2 as httpx
import pytest

from ratchet.client import AgentClient
from ratchet.evals import Case, CaseScore, Compared, Outcome, Report, Score
from ratchet.web import TokenAuth, create_app

from ..web_http import ALICE, BOB, OPS

AUTH = TokenAuth({ALICE: "alice", BOB: "bob", OPS: "ops"}, operators=["ops"])


def report() -> Report:
    def scored(case: str, value: float) -> CaseScore:
        return CaseScore(case_id=case, scores={"contains": Score(value=value)}, value=value)

    cases = [
        Compared(
            case=Case(id=f"session-1#{n}", prompt=prompt),
            old=Outcome(answer=old),
            new=Outcome(answer=new),
            old_score=scored(f"session-1#{n}", 0.0),
            new_score=scored(f"session-1#{n}", 1.0),
        )
        for n, (prompt, old, new) in enumerate(
            [("Weather in Oslo?", "snow", "Expect snow today!"), ("And Lima?", "sun", "Sun!")], 1
        )
    ]
    return Report(agent="weather-v2", cases=cases)


@pytest.fixture
def reports(tmp_path: Path) -> Path:
    root = tmp_path / "reports"
    report().write(root / "week47")
    (root / "notes").mkdir()  # no report.json: not listed
    (root / "broken").mkdir()
    (root / "broken" / "report.json").write_text("{")  # half written: not listed
    (tmp_path / "secret.json").write_text('{"agent": "x"}')
    return root


async def http(app) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield client


@pytest.fixture
async def served(agent_client: AgentClient, reports: Path) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(agent_client, auth=AUTH, reports=reports, report_readers=["alice"])
    async for client in http(app):
        yield client


def as_(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_a_reader_lists_the_reports_and_reads_one_case_by_case(served: httpx.AsyncClient):
    listed = await served.get("/v1/evals", headers=as_(ALICE))
    assert listed.status_code == 200
    (summary,) = listed.json()
    assert summary["name"] == "week47" and summary["agent"] == "weather-v2"
    assert (summary["cases"], summary["old_score"], summary["new_score"]) == (2, 0.0, 1.0)
    one = await served.get("/v1/evals/week47", headers=as_(ALICE))
    cases = one.json()["cases"]
    assert [(c["old"]["answer"], c["new"]["answer"]) for c in cases] == [
        ("snow", "Expect snow today!"),
        ("sun", "Sun!"),
    ]


async def test_others_are_refused_and_no_path_leaves_the_directory(served: httpx.AsyncClient):
    refused = await served.get("/v1/evals", headers=as_(BOB))
    assert refused.status_code == 403
    assert "bob may not read evaluation reports" in refused.json()["detail"]
    assert (await served.get("/v1/evals")).status_code == 401
    # A report's name is unknown to a caller who may not read reports: no hint it exists.
    hidden, unknown = [
        await served.get(f"/v1/evals/{name}", headers=as_(BOB)) for name in ("week47", "nope")
    ]
    assert (hidden.status_code, unknown.status_code) == (404, 404)
    assert hidden.json()["detail"].replace("week47", "X") == unknown.json()["detail"].replace(
        "nope", "X"
    )
    # An operator (without a tenant) reads them, named in --report-readers or not.
    assert (await served.get("/v1/evals/week47", headers=as_(OPS))).status_code == 200
    for name in ("notes", "broken", "..", "%2E%2E%2Fsecret.json", "..%2Fsecret.json"):
        answer = await served.get(f"/v1/evals/{name}", headers=as_(ALICE))
        assert answer.status_code == 404, name


async def test_a_server_without_reports_says_how_to_serve_them(agent_client: AgentClient):
    async for client in http(create_app(agent_client, auth=AUTH)):
        answer = await client.get("/v1/evals", headers=as_(ALICE))
    assert answer.status_code == 404 and "--reports DIR" in answer.json()["detail"]


async def test_the_server_says_whom_it_serves_reports(agent_client: AgentClient, reports: Path):
    served = create_app(agent_client, auth=AUTH, reports=reports, report_readers=["alice"])
    for app, token, expected in [(served, ALICE, True), (served, BOB, False)] + [
        (create_app(agent_client, auth=AUTH), ALICE, False)
    ]:
        async for client in http(app):
            answer = await client.get("/v1/server", headers=as_(token))
        assert answer.json()["reports"] is expected, token
