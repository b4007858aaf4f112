"""``ratchet web`` over real HTTP: a uvicorn process (``ratchet web``) in front of the
dev server, the agents' worker in the test. Every resource, auth and origins, bad
bodies, streamed replies, resuming events by id, and two people racing to decide."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from typing import Any

import httpx2 as httpx
import pytest

from ratchet.client import AgentClient
from ratchet.devserver import DevServer, free_port
from ratchet.testing import ChildProcess
from ratchet.wire import SessionOptions
from ratchet.worker import build_worker

from ..conftest import ROOT
from ..web_agents import CHATTY_EVENTS, billing
from ..web_http import APP_ORIGIN, OPS, Web, new_session, problem_of, sse, until_status


async def test_a_session_over_http_from_start_to_close(alice: httpx.AsyncClient):
    assert (await alice.get("/v1/agents")).json() == {
        "agents": [
            *("billing", "chatty", "confirmer", "echo", "seeder"),
            *("slow", "slow_writer", "writer"),
        ]
    }
    session = await new_session(alice, "echo")
    first = await alice.post(f"/v1/sessions/{session}/messages", json={"text": "hello"})
    assert first.status_code == 200 and first.json()["output"] == "echo 1: hello"
    await alice.post(f"/v1/sessions/{session}/messages", json={"text": "again"})

    status = (await alice.get(f"/v1/sessions/{session}")).json()
    assert (status["agent"], status["runs"], status["status"]) == ("echo", 2, "PENDING")
    thread = (await alice.get(f"/v1/sessions/{session}/thread")).json()
    assert [m["content"] for m in thread["messages"]] == [
        "hello",
        "echo 1: hello",
        "again",
        "echo 2: again",
    ]
    path = f"/v1/sessions/{session}/thread"
    latest = (await alice.get(path, params={"last": 1})).json()
    assert (latest["start"], [m["content"] for m in latest["messages"]]) == (3, ["echo 2: again"])
    middle = (await alice.get(path, params={"after": 1, "limit": 2})).json()
    assert (middle["start"], [m["content"] for m in middle["messages"]]) == (
        1,
        ["echo 1: hello", "again"],
    )
    assert thread["start"] == 0
    both = problem_of(
        await alice.get(path, params={"after": 1, "last": 1}), 422, "InvalidInputError"
    )
    assert "not both" in both["detail"]
    state = (await alice.get(f"/v1/sessions/{session}/state")).json()
    assert json.dumps(state).count('"count"') == 1
    turns = (await alice.get(f"/v1/sessions/{session}/turns")).json()
    assert len(turns) == 2

    fork = await alice.post(f"/v1/sessions/{session}/fork", json={"at_turn": 1})
    assert fork.status_code == 201
    forked = fork.json()["id"]
    reply = await alice.post(f"/v1/sessions/{forked}/messages", json={"text": "forked"})
    assert reply.json()["output"] == "echo 2: forked"  # state as of turn 1

    closed = await alice.post(f"/v1/sessions/{session}/close")
    assert closed.json()["status"] == "CLOSED"
    refused = await alice.post(f"/v1/sessions/{session}/messages", json={"text": "late"})
    problem_of(refused, 409, "SessionClosedError")
    listed = (await alice.get("/v1/sessions", params={"agent": "echo"})).json()
    assert {session, forked} <= {row["id"] for row in listed}


async def test_delete_removes_a_session_and_answers_404_for_one_it_does_not_know(
    alice: httpx.AsyncClient,
):
    options = SessionOptions(continue_as_new_after_runs=1).model_dump(mode="json")
    session = await new_session(alice, "echo", options=options)
    for text in ("a", "b"):
        await alice.post(f"/v1/sessions/{session}/messages", json={"text": text})
    fork = await alice.post(f"/v1/sessions/{session}/fork", json={"at_turn": 1})
    forked = fork.json()["id"]

    refused = problem_of(await alice.delete(f"/v1/sessions/{session}"), 409, "SessionHasForksError")
    assert forked in refused["detail"] and "force" in refused["detail"]
    deleted = await alice.delete(f"/v1/sessions/{session}", params={"force": "true"})
    assert deleted.status_code == 200, deleted.text
    body = deleted.json()
    assert (body["found"], body["terminated"], len(body["runs"])) == (True, True, 3)
    assert body["forks"] == [forked]
    listed = (await alice.get("/v1/sessions", params={"agent": "echo", "limit": 1000})).json()
    assert session not in {row["id"] for row in listed} and forked in {r["id"] for r in listed}
    problem_of(await alice.get(f"/v1/sessions/{session}"), 404, "SessionNotFoundError")

    again = problem_of(await alice.delete(f"/v1/sessions/{session}"), 404, "SessionNotFoundError")
    nobody = f"no-such-session-{uuid.uuid4().hex[:6]}"  # no other test's rerun names it
    unknown = problem_of(await alice.delete(f"/v1/sessions/{nobody}"), 404, "SessionNotFoundError")
    assert again["detail"] == f"There is no session {session!r}."
    assert unknown["detail"] == f"There is no session {nobody!r}."


async def test_a_reply_streams_its_events_then_the_result(alice: httpx.AsyncClient):
    session = await new_session(alice, "chatty")
    headers = {"Accept": "text/event-stream"}
    async with alice.stream(
        "POST", f"/v1/sessions/{session}/messages", json={"text": "go"}, headers=headers
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        frames = [frame async for frame in sse(response)]
    ids = [event_id for event_id, _, _ in frames if event_id is not None]
    assert ids == sorted(set(ids)), "ids strictly increase"
    custom = [data["data"]["n"] for _, kind, data in frames if kind == "custom"]
    assert custom == list(range(CHATTY_EVENTS))
    kinds = [kind for _, kind, _ in frames]
    assert kinds[-2:] == ["run_finished", "result"]
    assert frames[-1][2]["output"] == f"said {CHATTY_EVENTS} things"


async def test_events_resume_exactly_after_the_last_event_id(alice: httpx.AsyncClient, web: Web):
    session = await new_session(alice, "echo")
    for text in ("one", "two"):
        await alice.post(f"/v1/sessions/{session}/messages", json={"text": text})
    await alice.post(f"/v1/sessions/{session}/close")
    everything = await read_events(alice, session)
    ids = [event_id for event_id, _, _ in everything]
    middle = ids[len(ids) // 2]
    async with web.client() as again:  # a new connection, as to another replica
        rest = await read_events(again, session, headers={"Last-Event-ID": str(middle)})
    assert rest == everything[len(ids) // 2 + 1 :]
    by_query = await read_events(alice, session, params={"after": str(middle)})
    assert by_query == rest


async def test_a_retried_post_with_the_same_idempotency_key_sends_once(alice: httpx.AsyncClient):
    session = await new_session(alice, "echo")
    key = {"Idempotency-Key": f"msg-{uuid.uuid4().hex}"}
    url = f"/v1/sessions/{session}/messages"
    first = await alice.post(url, json={"text": "pay once"}, headers=key)
    again = await alice.post(url, json={"text": "pay once"}, headers=key)
    assert first.json()["output"] == again.json()["output"] == "echo 1: pay once"
    thread = (await alice.get(f"/v1/sessions/{session}/thread")).json()
    assert [m["content"] for m in thread["messages"]] == ["pay once", "echo 1: pay once"]
    other = await alice.post(url, json={"text": "pay twice"}, headers={"Idempotency-Key": "b"})
    assert other.json()["output"] == "echo 2: pay twice"
    reused = await alice.post(url, json={"text": "pay 1000"}, headers=key)
    body = problem_of(reused, 409, "ConversationConflictError")
    assert key["Idempotency-Key"] in body["detail"]
    await alice.post(f"/v1/sessions/{session}/close")


async def test_an_empty_or_over_long_idempotency_key_is_refused_and_sends_nothing(
    alice: httpx.AsyncClient,
):
    """An empty key was replaced by a fresh request id, so a retried POST ran its
    message again; a streamed one is refused before its stream starts."""
    session = await new_session(alice, "echo")
    url = f"/v1/sessions/{session}/messages"
    for key, accept, why in [
        ("", "application/json", "Idempotency-Key is empty"),
        ("", "text/event-stream", "Idempotency-Key is empty"),
        ("k" * 201, "application/json", "Idempotency-Key is 201 characters long"),
    ]:
        headers = {"Idempotency-Key": key, "Accept": accept}
        refused = await alice.post(url, json={"text": "pay once"}, headers=headers)
        detail = problem_of(refused, 422, "InvalidInputError")["detail"]
        assert why in detail and "no Idempotency-Key header" in detail
    thread = (await alice.get(f"/v1/sessions/{session}/thread")).json()
    assert thread["messages"] == []
    await alice.post(f"/v1/sessions/{session}/close")


async def test_an_event_id_older_than_the_retained_events_is_gone(alice: httpx.AsyncClient):
    """A session keeps its latest events across continue-as-new: asking for an older
    one answers 410 with a snapshot to restart from, not a silent gap."""
    options = SessionOptions(continue_as_new_after_runs=1).model_dump(mode="json")
    session = await new_session(alice, "chatty", options=options)
    for text in ("a", "b"):
        await alice.post(f"/v1/sessions/{session}/messages", json={"text": text})
    gone = await alice.get(f"/v1/sessions/{session}/events", params={"after": "0"})
    body = problem_of(gone, 410, "EventsExpiredError")
    assert body["oldest"] > 1 and body["snapshot"]["thread"]["messages"]
    await alice.post(f"/v1/sessions/{session}/close")


async def test_an_event_id_within_500_of_the_end_resumes_across_continue_as_new(
    alice: httpx.AsyncClient,
):
    """The run in progress holds only the latest events; older ones within 500 of the
    end are read from the runs before it, so a client that resumes loses none."""
    options = SessionOptions(continue_as_new_after_runs=1).model_dump(mode="json")
    session = await new_session(alice, "chatty", options=options)
    for text in ("a", "b"):
        await alice.post(f"/v1/sessions/{session}/messages", json={"text": text})
    await alice.post(f"/v1/sessions/{session}/close")
    everything = await read_events(alice, session)  # from the oldest held: the last 500
    ids = [event_id for event_id, _, _ in everything]
    assert len(ids) >= 500 and ids == list(range(ids[0], ids[0] + len(ids)))
    at = len(ids) - 450
    rest = await read_events(alice, session, headers={"Last-Event-ID": str(ids[at])})
    assert rest == everything[at + 1 :]


async def read_events(http: httpx.AsyncClient, session: str, **options: Any) -> list[Any]:
    async with http.stream("GET", f"/v1/sessions/{session}/events", **options) as response:
        assert response.status_code == 200
        return [frame async for frame in sse(response)]


async def test_two_people_race_to_decide_and_one_wins(alice: httpx.AsyncClient, web: Web):
    session = await new_session(alice, "billing")
    sending = asyncio.ensure_future(
        alice.post(f"/v1/sessions/{session}/messages", json={"text": "pay acme"})
    )
    await until_status(alice, session, "AWAITING_APPROVAL")
    (call,) = (await alice.get(f"/v1/sessions/{session}/pending")).json()
    inbox = (await alice.get("/v1/approvals")).json()
    assert call["action"]["id"] in [view["action"]["id"] for view in inbox]

    async with web.client(OPS) as ops:  # the owner and an operator
        decision = {"id": call["action"]["id"], "decision": "approve", "scope": "session"}
        answers = await asyncio.gather(
            alice.post(f"/v1/sessions/{session}/decisions", json=decision),
            ops.post(
                f"/v1/sessions/{session}/decisions",
                json={"id": call["action"]["id"], "decision": "reject", "reason": "not today"},
            ),
        )
    won = [r for r in answers if r.status_code == 200]
    lost = [r for r in answers if r.status_code != 200]
    assert len(won) == 1 and len(lost) == 1
    problem_of(lost[0], 409, "DecisionError")
    winner = won[0].json()
    assert winner["by"] in ("alice", "ops")
    assert (await sending).status_code == 200
    thread = (await alice.get(f"/v1/sessions/{session}/thread")).json()
    (tool_result,) = [m["content"] for m in thread["messages"] if m["role"] == "tool"]
    if winner["approved"]:
        assert (winner["by"], tool_result) == ("alice", "paid 500 to acme")
        assert winner["always"]  # scope "session": pay is allowed for the rest of it
    else:
        assert winner["by"] == "ops" and "not today" in tool_result


async def test_no_token_a_wrong_token_or_a_foreign_origin_is_refused(web: Web, worker: None):
    async with web.client(token=None) as anonymous:
        problem_of(await anonymous.get("/v1/agents"), 401, "AuthError")
        assert (await anonymous.get("/healthz")).status_code == 200
    async with web.client(token="not-a-token-of-anyone") as stranger:
        problem_of(await stranger.get("/v1/sessions"), 401, "AuthError")
    async with web.client(Origin="http://evil.example") as foreign:
        problem_of(await foreign.get("/v1/agents"), 403, "Forbidden")
    async with web.client(Origin=APP_ORIGIN) as app:
        allowed = await app.get("/v1/agents")
        assert allowed.headers["access-control-allow-origin"] == APP_ORIGIN


async def test_bad_bodies_get_a_clear_4xx_and_start_nothing(alice: httpx.AsyncClient):
    before = {row["id"] for row in (await alice.get("/v1/sessions")).json()}
    problem_of(await alice.post("/v1/sessions", json={}), 422, "InvalidInputError")
    problem_of(await alice.post("/v1/sessions", content=b"{not json"), 422, "InvalidInputError")
    body = problem_of(
        await alice.post("/v1/sessions", json={"agent": "nobody"}), 404, "AgentNotFoundError"
    )
    assert "nobody" in body["detail"]
    huge = {"agent": "echo", "state": {"blob": "x" * (8 << 20)}}
    too_large = problem_of(await alice.post("/v1/sessions", json=huge), 413, "PayloadTooLargeError")
    assert "8,388,608 bytes" in too_large["detail"] and "--max-body" in too_large["detail"]
    for unreachable in ("has space", "a/b", "what?", "100%"):  # ids that go in URLs
        body = {"agent": "echo", "session_id": unreachable}
        problem_of(await alice.post("/v1/sessions", json=body), 422, "InvalidInputError")
    bad_options = {"agent": "echo", "options": {"token_budget": 0}}
    refused = problem_of(
        await alice.post("/v1/sessions", json=bad_options), 422, "InvalidInputError"
    )
    assert "token_budget=0, but it must be at least 1" in refused["detail"]
    misplaced = {"agent": "echo", "options": {"approval_timeout": 60, "run": {"max_turnz": 3}}}
    refused = problem_of(await alice.post("/v1/sessions", json=misplaced), 422, "InvalidInputError")
    assert "approval_timeout (it is an option of run" in refused["detail"]
    assert "run.max_turnz (did you mean max_turns?)" in refused["detail"]
    after = {row["id"] for row in (await alice.get("/v1/sessions")).json()}
    assert after == before

    session = await new_session(alice, "echo")
    empty = await alice.post(f"/v1/sessions/{session}/messages", json={"text": ""})
    problem_of(empty, 422, "InvalidInputError")
    wide = {"text": "é" * 150_000}  # 150,000 characters, 300,000 bytes: over 256 KiB
    too_long = problem_of(
        await alice.post(f"/v1/sessions/{session}/messages", json=wide), 413, "PayloadTooLargeError"
    )
    assert "300,000 bytes" in too_long["detail"] and "--max-message" in too_long["detail"]
    missing = await alice.get("/v1/sessions/session-nobody-000/pending")
    problem_of(missing, 404, "SessionNotFoundError")
    wrong_id = await alice.get(f"/v1/sessions/{session}/events", headers={"Last-Event-ID": "x"})
    problem_of(wrong_id, 422, "InvalidInputError")
    decisions = f"/v1/sessions/{session}/decisions"
    sweeping = {"id": "call_1", "decision": "reject", "scope": "session"}
    refused = problem_of(await alice.post(decisions, json=sweeping), 422, "InvalidInputError")
    assert "goes with an approval" in refused["detail"]
    unknown = {"id": "call_1", "decision": "approve", "scope": "forever"}
    problem_of(await alice.post(decisions, json=unknown), 422, "InvalidInputError")
    await alice.post(f"/v1/sessions/{session}/close")


@pytest.mark.parametrize(
    "argv, env, said",
    [
        (["--no-auth", "--host", "0.0.0.0"], {}, "only on loopback"),
        ([], {"RATCHET_WEB_TOKENS": ""}, "RATCHET_WEB_TOKENS is not set"),
        ([], {"RATCHET_WEB_TOKENS": "alice"}, "'alice' is not 'identity:token'"),
        ([], {"RATCHET_WEB_TOKENS": "alice:short"}, "shorter than 16 characters"),
    ],
)
@pytest.mark.slow  # a child process
def test_ratchet_web_refuses_to_serve_without_safe_auth(argv, env, said, tmp_path):
    command = [sys.executable, "-m", "ratchet.cli", "web", "--port", str(free_port()), *argv]
    done = subprocess.run(
        command,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1 and said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


async def test_no_auth_serves_loopback_with_a_warning(temporal_server: DevServer, web_queue: str):
    """The README's local command: ``ratchet web --no-auth`` on 127.0.0.1."""
    port = free_port()
    argv = [sys.executable, "-m", "ratchet.cli", "web", "--no-auth", "--port", str(port)]
    process = ChildProcess([*argv, "--task-queue", web_queue], temporal_server, cwd=ROOT)
    try:
        process.wait_for("ratchet web on")
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as anyone:
            assert (await anyone.get("/v1/agents")).json() == {"agents": None}
            assert (await anyone.get("/openapi.json")).json()["info"]["title"] == "Ratchet"
            # A page whose name was rebound to 127.0.0.1 (DNS rebinding) gets nothing.
            rebound = await anyone.get("/v1/agents", headers={"Host": f"evil.example:{port}"})
            assert rebound.status_code == 400
    finally:
        process.stop()
    assert "warning: --no-auth" in process.output


async def test_the_inbox_leaves_out_a_session_whose_worker_is_gone(
    alice: httpx.AsyncClient, agent_client: AgentClient
):
    """One session left waiting for approval with no worker (another task queue) made
    GET /v1/approvals a 500 for everyone ("no poller seen")."""
    async with build_worker(agent_client, {"billing": billing}):
        orphan = await agent_client.start_session("billing")
        await orphan.submit("pay acme")
        await orphan.wait_for_pending()
    session = await new_session(alice, "billing")
    sending = asyncio.ensure_future(
        alice.post(f"/v1/sessions/{session}/messages", json={"text": "pay acme"})
    )
    async with alice.stream("GET", f"/v1/sessions/{session}/events") as events:
        async for _, kind, data in sse(events):
            if kind == "status" and data.get("text") == "AWAITING_APPROVAL":
                break
    inbox = await alice.get("/v1/approvals")
    assert inbox.status_code == 200, inbox.text
    listed = [view["run_id"] for view in inbox.json()]
    assert any(session in run for run in listed)
    assert not any(orphan.id in run for run in listed)
    (call,) = (await alice.get(f"/v1/sessions/{session}/pending")).json()
    await alice.post(
        f"/v1/sessions/{session}/decisions", json={"id": call["action"]["id"], "decision": "reject"}
    )
    await sending
