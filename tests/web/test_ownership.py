"""Each caller reaches only their own sessions: two users, an identity with a quote,
operators with and without a tenant, and a second tenant go through every route of a
real ``create_app`` served by uvicorn over HTTP, against the test's Temporal server."""

from __future__ import annotations

import asyncio
import json
import socket
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx2 as httpx
import pytest
import uvicorn
from starlette.requests import Request

from ratchet.agents import RunContext, ScriptedModel, ToolCallingAgent, agent_tool
from ratchet.client import AgentClient
from ratchet.types import Message
from ratchet.web import Action, AuthError, Principal, create_app, owners_only
from ratchet.worker import build_worker

from ..web_agents import Echo, billing
from ..web_http import problem_of, until_status

PEOPLE = {
    "alice-token-0000": Principal("alice", tenant="acme"),
    "bob-token-000000": Principal("bob", tenant="acme"),
    "quote-token-0000": Principal("o'hara", tenant="acme"),
    "ops-token-000000": Principal("ops", operator=True, tenant="acme"),
    "carol-token-0000": Principal("carol", tenant="globex"),
    "globex-ops-00000": Principal("gops", operator=True, tenant="globex"),
    "root-token-00000": Principal("root", operator=True),
}
ALICE, BOB, QUOTE, OPS, CAROL, GOPS, ROOT = PEOPLE
# Identities a visibility query could take for another's, or fail on.
ODD = {
    "alice-quoted-000": Principal("alice'", tenant="acme"),
    "quoted-alice-000": Principal("'alice", tenant="acme"),
    "alice-untenanted": Principal("alice"),
    "acme-quoted-ops0": Principal("ops", operator=True, tenant="acme'"),
    "back-slash-00000": Principal("back\\slash\nnew\x00line"),
    "viewer-token-000": Principal("viewer", tenant="acme"),
    "too-long-0000000": Principal("x" * 256),
}
PEOPLE.update(ODD)


def authenticate(request: Request) -> Principal:
    """A custom scheme, as ``create_app(auth=...)`` takes one: a bearer token each."""
    token = request.headers.get("authorization", "").removeprefix("Bearer ")
    if token not in PEOPLE:
        raise AuthError("Unknown token.")
    return PEOPLE[token]


def viewers_do_not_decide(caller: Principal, action: Action, target: Any) -> Any:
    """A custom policy: owners_only, except that ``viewer`` may not decide."""
    if caller.identity == "viewer" and action == "decide":
        return False
    return owners_only(caller, action, target)


def _lead(messages: Sequence[Message], context: RunContext) -> str | Message:
    if messages[-1].role == "tool":
        return f"report: {messages[-1].text}"
    return ScriptedModel.call("researcher", input="why tides?")


def agents() -> dict[str, Any]:
    lead = ToolCallingAgent(ScriptedModel(_lead), [agent_tool("researcher", "Research.")])
    researcher = ToolCallingAgent(ScriptedModel(lambda m, c: "the moon"))
    boss = ToolCallingAgent(
        ScriptedModel(
            lambda m, c: (
                f"done: {m[-1].text}"
                if m[-1].role == "tool"
                else ScriptedModel.call("billing", input="pay acme")
            )
        ),
        [agent_tool("billing", "Pays.")],
    )
    return {
        "echo": Echo,
        "billing": billing,
        "lead": lead,
        "researcher": researcher,
        "boss": boss,
    }


class App:
    def __init__(self, url: str) -> None:
        self.url = url

    def as_(self, token: str) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {token}"}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=60)


@pytest.fixture
async def app(agent_client: AgentClient) -> AsyncIterator[App]:
    served = create_app(
        agent_client, auth=authenticate, authorize=viewers_do_not_decide, agents=sorted(agents())
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    listening = asyncio.Event()

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            listening.set()

    server = Server(uvicorn.Config(served, log_level="warning"))
    async with build_worker(agent_client, agents()):
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        await listening.wait()
        try:
            yield App(f"http://127.0.0.1:{sock.getsockname()[1]}")
        finally:
            server.should_exit = True
            await serving


async def create(http: httpx.AsyncClient, agent: str, **body: Any) -> str:
    answer = await http.post("/v1/sessions", json={"agent": agent, **body})
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


async def waiting_for_approval(http: httpx.AsyncClient, session: str) -> str:
    """Sends the payment and returns the pending call's id once it waits."""
    sending = asyncio.ensure_future(
        http.post(f"/v1/sessions/{session}/messages", json={"text": "pay acme"})
    )
    await until_status(http, session, "AWAITING_APPROVAL")
    sending.cancel()
    (call,) = (await http.get(f"/v1/sessions/{session}/pending")).json()
    return call["action"]["id"]


def routes(session: str, call: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    """Every route on one session: method, path, JSON body."""
    at = f"/v1/sessions/{session}"
    return [
        ("GET", at, None),
        ("GET", f"{at}/thread", None),
        ("GET", f"{at}/state", None),
        ("GET", f"{at}/turns", None),
        ("GET", f"{at}/pending", None),
        ("GET", f"{at}/events?after=-1", None),
        ("POST", f"{at}/messages", {"text": "hijack"}),
        ("POST", f"{at}/decisions", {"id": call, "decision": "reject", "reason": "mine"}),
        ("POST", f"{at}/fork", {}),
        ("POST", f"{at}/stop", None),
        ("POST", f"{at}/close", None),
        ("DELETE", f"{at}?force=true", None),
    ]


async def refused_alike(http: httpx.AsyncClient, method: str, path: str, body: Any) -> None:
    """``path`` answers as the same path on an unknown id does: 404, same words."""
    answer = await http.request(method, path, json=body)
    found = problem_of(answer, 404, "SessionNotFoundError")
    session = path.split("/")[3].split("?")[0]
    unknown = await http.request(method, path.replace(session, "no-such-session"), json=body)
    assert found["detail"].replace(session, "X") == (
        problem_of(unknown, 404, "SessionNotFoundError")["detail"].replace("no-such-session", "X")
    )


async def listed(http: httpx.AsyncClient, *present: str) -> set[str]:
    """The ids the caller's list holds (runs too), once it holds ``present``: lists
    are eventually consistent (on Temporal Cloud, a second or so behind a start)."""
    for _ in range(LIST_TRIES):
        answer = await http.get("/v1/sessions?runs=true")
        assert answer.status_code == 200, answer.text
        found = {row["id"] for row in answer.json()}
        if found >= set(present):
            return found
        await asyncio.sleep(0.2)  # polls the list: what the test waits for is in it
    raise AssertionError(f"{present} not listed within {LIST_TRIES} tries: {found}")


LIST_TRIES = 50


async def test_nobody_reaches_a_session_that_is_not_theirs(app: App, agent_client: AgentClient):
    async with app.as_(ALICE) as alice, app.as_(BOB) as bob, app.as_(CAROL) as carol:
        chat = await create(alice, "echo", session_id="chat")
        answer = await alice.post(f"/v1/sessions/{chat}/messages", json={"text": "hello"})
        assert answer.status_code == 200, answer.text
        payment = await create(alice, "billing")
        call = await waiting_for_approval(alice, payment)
        before = (await alice.get(f"/v1/sessions/{chat}/thread")).json()["messages"]

        await listed(alice, chat, payment)  # listed, so a list missing them is filtered
        for stranger in (bob, carol):
            for session in (chat, payment):
                for method, path, body in routes(session, call):
                    await refused_alike(stranger, method, path, body)
            assert not (await listed(stranger)) & {chat, payment}
            inbox = (await stranger.get("/v1/approvals")).json()
            assert call not in [view["action"]["id"] for view in inbox]

        # An id Alice chose is Bob's own when he chooses it: another session.
        bobs_chat = await create(bob, "echo", session_id="chat")
        # A caller cannot take another's share of the model providers (fairness keys).
        jump = {"agent": "echo", "options": {"run": {"fairness_key": "alice"}}}
        problem_of(await bob.post("/v1/sessions", json=jump), 422, "InvalidInputError")
        assert bobs_chat != chat
        await listed(bob, bobs_chat)

        # How busy the server is (others' streams) is the operators' to see.
        assert (await bob.get("/v1/server")).json().keys() == {"reports"}

        after = (await alice.get(f"/v1/sessions/{chat}/thread")).json()["messages"]
        assert [m["content"] for m in after] == [m["content"] for m in before]
        assert (await alice.get(f"/v1/sessions/{chat}")).json()["status"] != "CLOSED"
        assert call in [v["action"]["id"] for v in (await alice.get("/v1/approvals")).json()]
        assert bobs_chat not in await listed(alice)


async def test_operators_see_their_tenant_and_decide_as_themselves(
    app: App, agent_client: AgentClient
):
    async with app.as_(ALICE) as alice, app.as_(OPS) as ops, app.as_(GOPS) as gops:
        payment = await create(alice, "billing")
        call = await waiting_for_approval(alice, payment)
        unowned = (await agent_client.start_session("echo")).id  # the Python client's
        async with app.as_(ROOT) as root:
            await listed(root, payment, unowned)
        assert unowned not in await listed(ops, payment)
        assert payment not in await listed(gops)
        await refused_alike(gops, "GET", f"/v1/sessions/{payment}", None)
        await refused_alike(alice, "GET", f"/v1/sessions/{unowned}", None)
        # One a backend started for Alice (the Python client, owner=) is hers by its id.
        hers = (await agent_client.start_session("echo", owner="alice", tenant="acme")).id
        assert (await alice.get(f"/v1/sessions/{hers}")).status_code == 200
        async with app.as_(BOB) as bob:
            await refused_alike(bob, "GET", f"/v1/sessions/{hers}", None)

        assert (await ops.get("/v1/server")).json().keys() == {"reports"}  # one tenant's
        async with app.as_(ROOT) as root:
            assert "subscriptions" in (await root.get("/v1/server")).json()
        inbox = (await ops.get("/v1/approvals")).json()
        assert call in [view["action"]["id"] for view in inbox]
        decided = await ops.post(
            f"/v1/sessions/{payment}/decisions", json={"id": call, "decision": "approve"}
        )
        assert decided.status_code == 200, decided.text
        assert decided.json()["by"] == "ops"

        # An operator's fork is the operator's: its source's owner does not reach it.
        forked = await ops.post(f"/v1/sessions/{payment}/fork", json={})
        assert forked.status_code == 201, forked.text
        fork = forked.json()["id"]
        await refused_alike(alice, "GET", f"/v1/sessions/{fork}", None)
        await listed(ops, fork)


async def test_a_fork_is_its_forkers_and_sub_agent_runs_their_owners(app: App):
    async with app.as_(ALICE) as alice, app.as_(BOB) as bob, app.as_(QUOTE) as quote:
        lead = await create(alice, "lead")
        answer = await alice.post(f"/v1/sessions/{lead}/messages", json={"text": "tides"})
        assert answer.status_code == 200 and "the moon" in answer.text, answer.text
        runs = (await alice.get("/v1/sessions?runs=true")).json()
        (child,) = [row["id"] for row in runs if row["kind"] == "run"]
        await listed(alice, child)
        for path in (f"/v1/runs/{child}/turns", f"/v1/runs/{child}/events?after=-1"):
            assert (await alice.get(path)).status_code == 200
            problem_of(await bob.get(path), 404, "NotFoundError")
        problem_of(await bob.get(f"/v1/runs/{child}"), 404, "NotFoundError")
        assert child not in await listed(bob)

        forked = await alice.post(f"/v1/sessions/{lead}/fork", json={"session_id": "branch"})
        assert forked.status_code == 201, forked.text
        fork = forked.json()["id"]
        assert (await alice.get(f"/v1/sessions/{fork}/thread")).status_code == 200
        await refused_alike(bob, "GET", f"/v1/sessions/{fork}", None)

        # JWT subjects are any string: one with a quote lists its own, and only those.
        mine = await create(quote, "echo")
        assert await listed(quote, mine) == {mine}


async def test_an_agui_thread_is_the_callers_own(app: App):
    body = {
        "threadId": "t-" + uuid.uuid4().hex[:6],
        "state": {},
        "messages": [{"id": "m1", "role": "user", "content": "hi"}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    async with app.as_(ALICE) as alice, app.as_(BOB) as bob:
        first = await alice.post("/v1/agui/echo", json={**body, "runId": "r1"})
        assert first.status_code == 200 and "echo 1: hi" in first.text, first.text
        rows = (await alice.get("/v1/sessions")).json()
        (alices,) = [row["id"] for row in rows if row["id"].endswith(body["threadId"])]
        # Bob's thread of the same name, or of Alice's session id, is a new one of his.
        for thread in (body["threadId"], alices):
            again = await bob.post(
                "/v1/agui/echo", json={**body, "threadId": thread, "runId": "r2"}
            )
            assert again.status_code == 200 and "echo 1: hi" in again.text, again.text
        assert alices not in await listed(bob)
        thread = (await alice.get(f"/v1/sessions/{alices}/thread")).json()["messages"]
        assert [m["content"] for m in thread] == ["hi", "echo 1: hi"]


async def test_odd_identities_list_only_their_own(app: App):
    """Temporal's query parser drops a quote at either end of a value and fails on
    NUL: owners and tenants are indexed so that none of that reaches it."""
    async with app.as_(ALICE) as alice:
        mine = await create(alice, "echo")
        await listed(alice, mine)
    tokens = [token for token in ODD if token != "too-long-0000000"]
    for token in tokens:
        async with app.as_(token) as odd:
            own = await create(odd, "echo")
            assert mine not in await listed(odd, own)
            inbox = await odd.get("/v1/approvals")
            assert inbox.status_code == 200, inbox.text
    async with app.as_("too-long-0000000") as long:
        problem = problem_of(await long.get("/v1/sessions"), 401, "AuthError")
        assert "255" in problem["detail"]


async def test_ids_operators_choose_are_theirs_too(app: App):
    async with app.as_(OPS) as ops, app.as_(GOPS) as gops:
        ours = await create(ops, "echo", session_id="support-1")
        theirs = await create(gops, "echo", session_id="support-1")
        assert ours != theirs
        await refused_alike(gops, "GET", f"/v1/sessions/{ours}", None)
        assert (await ops.get(f"/v1/sessions/{ours}")).status_code == 200


async def test_a_sub_agents_approval_is_decided_by_its_owner_only(app: App):
    async with app.as_(ALICE) as alice, app.as_(BOB) as bob:
        boss = await create(alice, "boss")
        sending = asyncio.ensure_future(
            alice.post(f"/v1/sessions/{boss}/messages", json={"text": "pay"})
        )
        for _ in range(LIST_TRIES):
            inbox = (await alice.get("/v1/approvals")).json()
            waiting = [view for view in inbox if view["run_id"].startswith("sub-")]
            if waiting:
                break
            await asyncio.sleep(0.2)  # polls the inbox: the sub-agent's approval comes
        (view,) = waiting
        decision = {"id": view["action"]["id"], "decision": "approve"}
        child = view["run_id"]
        refused = await bob.post(f"/v1/sessions/{child}/decisions", json=decision)
        problem_of(refused, 404, "SessionNotFoundError")
        decided = await alice.post(f"/v1/sessions/{child}/decisions", json=decision)
        assert decided.status_code == 200, decided.text
        assert decided.json()["by"] == "alice"
        answer = await sending
        assert "paid 500 to acme" in answer.text or "Paid 500" in answer.text, answer.text


async def test_an_agui_resume_is_a_decision_the_policy_may_refuse(app: App):
    body = {
        "threadId": "pay-" + uuid.uuid4().hex[:6],
        "state": {},
        "messages": [{"id": "m1", "role": "user", "content": "pay acme"}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    async with app.as_("viewer-token-000") as viewer:
        first = await viewer.post("/v1/agui/billing", json={**body, "runId": "r1"})
        assert first.status_code == 200 and "interrupt" in first.text, first.text
        frames = [json.loads(line[6:]) for line in first.text.splitlines() if line[:6] == "data: "]
        (interrupt,) = frames[-1]["outcome"]["interrupts"]
        call = interrupt["id"]
        resume = [{"interruptId": call, "status": "resolved", "payload": {"approved": True}}]
        refused = await viewer.post(
            "/v1/agui/billing", json={**body, "runId": "r2", "resume": resume}
        )
        problem_of(refused, 404, "SessionNotFoundError")
        (session,) = [
            row["id"]
            for row in (await viewer.get("/v1/sessions")).json()
            if row["id"].endswith(body["threadId"])
        ]
        pending = (await viewer.get(f"/v1/sessions/{session}/pending")).json()
        assert [view["action"]["id"] for view in pending] == [interrupt["toolCallId"]]
