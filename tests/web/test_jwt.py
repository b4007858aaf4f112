"""Sign-in with the app's identity provider: ``JwtAuth`` in front of a real app, against
an OIDC discovery document and a JWKS that a local HTTP server of the test publishes,
with keys the test generates. Valid tokens pass with their claims mapped; every kind of
bad token is a 401 naming its reason; a rotated key is taken within the cooldown."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import inspect
import json
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2 as httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ratchet import cli
from ratchet.cli._web import auth_from
from ratchet.client import AgentClient
from ratchet.devserver import DevServer, free_port
from ratchet.errors import ConfigurationError
from ratchet.testing import ChildProcess
from ratchet.web import JwtAuth, TokenAuth, create_app
from ratchet.web import _jwks as jwks

from ..conftest import ROOT
from ..web_http import problem_of

AUDIENCE = "ratchet-api"
DISCOVERY = "/.well-known/openid-configuration"


class Key:
    """A signing key pair the identity provider holds; ``jwk`` is what it publishes."""

    def __init__(self, kid: str, alg: str = "RS256") -> None:
        self.kid, self.alg = kid, alg
        if alg.startswith("ES"):
            self.private: Any = ec.generate_private_key(ec.SECP256R1())
            self.jwk = ECAlgorithm.to_jwk(self.private.public_key(), as_dict=True)
        else:
            self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            self.jwk = RSAAlgorithm.to_jwk(self.private.public_key(), as_dict=True)
        self.jwk.update(kid=kid, alg=alg, use="sig")

    def sign(self, claims: dict[str, Any], kid: str | None = None) -> str:
        return jwt.encode(claims, self.private, self.alg, headers={"kid": kid or self.kid})

    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


class Issuer:
    """The identity provider over real HTTP: a discovery document and its JWKS. It counts
    what is asked and fetched; with ``hold()``, JWKS (or discovery) answers wait until
    ``release()``; while ``failing``, the JWKS answers 500."""

    def __init__(self) -> None:
        self.keys: list[Key] = []
        self.fetches = {"discovery": 0, "jwks": 0}  # answered with the document
        self.arrived = {"discovery": 0, "jwks": 0}  # asked for, answered or not
        self.failing = False  # the JWKS answers 500
        self.last_jwks_fetch = 0.0
        self.held = threading.Event()  # a request waits to be answered
        self._gate: threading.Event | None = None
        self._hold = "jwks"
        self._lock = threading.Lock()
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                kind = {DISCOVERY: "discovery", "/jwks.json": "jwks"}.get(self.path)
                if kind is None:
                    return self.send_error(404)
                with issuer._lock:
                    issuer.arrived[kind] += 1
                if issuer._gate is not None and issuer._hold == kind:
                    issuer.held.set()
                    issuer._gate.wait(5)  # then answers: a blocked loop shows
                    issuer.held.clear()
                if kind == "jwks" and issuer.failing:
                    return self.send_error(500)
                with issuer._lock:
                    issuer.fetches[kind] += 1
                if kind == "discovery":
                    self.answer({"issuer": issuer.url, "jwks_uri": issuer.url + "/jwks.json"})
                else:
                    issuer.last_jwks_fetch = time.monotonic()
                    self.answer({"keys": [key.jwk for key in issuer.keys]})

            def answer(self, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                try:
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except BrokenPipeError:  # a held answer comes after the client's timeout
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def hold(self, kind: str = "jwks") -> None:
        self._gate, self._hold = threading.Event(), kind

    def release(self) -> None:
        if self._gate is not None:
            self._gate.set()
        self._gate = None

    def claims(self, **changes: Any) -> dict[str, Any]:
        now = int(time.time())
        claims = {"iss": self.url, "aud": AUDIENCE, "sub": "alice", "iat": now, "exp": now + 600}
        claims.update(changes)
        return {name: value for name, value in claims.items() if value is not None}

    def close(self) -> None:
        self.release()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def signing() -> Key:
    return Key("key-1")


@pytest.fixture
def issuer(signing: Key) -> Iterator[Issuer]:
    issuer = Issuer()
    issuer.keys.append(signing)
    yield issuer
    issuer.close()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def serve(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1")


@pytest.fixture
async def http(agent_client: AgentClient, issuer: Issuer) -> AsyncIterator[httpx.AsyncClient]:
    """The real app, signing in with ``issuer`` found by OIDC discovery."""
    auth = JwtAuth(issuer=issuer.url, audience=AUDIENCE, refresh_cooldown=60)
    async with serve(create_app(agent_client, auth=auth)) as client:
        yield client


def whoami(auth: JwtAuth | TokenAuth) -> httpx.AsyncClient:
    """An app answering the ``Principal`` that ``auth`` makes of each request."""

    async def me(request: Request) -> JSONResponse:
        found = auth.authenticate(request)
        return JSONResponse(asdict(await found if inspect.isawaitable(found) else found))

    return serve(Starlette(routes=[Route("/me", me)]))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def handmade(header: dict[str, Any], claims: dict[str, Any], secret: bytes | None) -> str:
    """A token PyJWT would refuse to sign: unsigned, or HS256 with a public key."""
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
    if secret is None:
        return signing_input + "."
    mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_b64(mac)}"


async def test_a_valid_token_reaches_the_api_and_discovery_and_keys_are_fetched_once(
    http: httpx.AsyncClient, issuer: Issuer, signing: Key
):
    for who in ("alice", "bob"):
        listed = await http.get(
            "/v1/sessions", headers=bearer(signing.sign(issuer.claims(sub=who)))
        )
        assert listed.status_code == 200, listed.text
    assert issuer.fetches == {"discovery": 1, "jwks": 1}
    refused = problem_of(await http.get("/v1/sessions"), 401, "AuthError")
    assert "Bearer" in refused["detail"]


async def test_claims_map_to_the_identity_the_operator_role_and_the_tenant(
    issuer: Issuer, signing: Key
):
    auth = JwtAuth(
        issuer=issuer.url,
        audience=[AUDIENCE, "other-api"],
        jwks_url=issuer.url + "/jwks.json",
        identity_claim="email",
        operator_claim="realm_access.roles",
        operator_value="ratchet-operator",
        tenant_claim="org",
    )
    user = issuer.claims(email="o'brien@example.com", org="acme", realm_access={"roles": ["u"]})
    operator = issuer.claims(
        email="ops@example.com", org="acme", realm_access={"roles": ["ratchet-operator"]}
    )
    async with whoami(auth) as client:
        me = (await client.get("/me", headers=bearer(signing.sign(user)))).json()
        assert me == {"identity": "o'brien@example.com", "operator": False, "tenant": "acme"}
        me = (await client.get("/me", headers=bearer(signing.sign(operator)))).json()
        assert me == {"identity": "ops@example.com", "operator": True, "tenant": "acme"}
    assert issuer.fetches == {"discovery": 0, "jwks": 1}  # jwks_url given: no discovery


async def test_an_operator_claim_can_be_a_flag_or_a_space_separated_scope(
    issuer: Issuer, signing: Key
):
    flag = JwtAuth(issuer=issuer.url, audience=AUDIENCE, operator_claim="https://x.io/operator")
    scope = JwtAuth(
        issuer=issuer.url, audience=AUDIENCE, operator_claim="scope", operator_value="ops"
    )
    cases = [
        (flag, {"https://x.io/operator": True}, True),
        (flag, {"https://x.io/operator": "true"}, False),  # only a JSON true
        (scope, {"scope": "openid ops"}, True),
        (scope, {"scope": "openid opsx"}, False),
    ]
    for auth, extra, operator in cases:
        async with whoami(auth) as client:
            token = signing.sign(issuer.claims(**extra))
            assert (await client.get("/me", headers=bearer(token))).json()["operator"] is operator


async def test_bad_tokens_are_refused_with_a_401_that_names_the_reason(
    http: httpx.AsyncClient, issuer: Issuer, signing: Key
):
    now = int(time.time())
    forger = Key(signing.kid)  # another key pair under the published key's id
    public = signing.public_pem()
    valid = issuer.claims()
    cases = {
        "expired": signing.sign(issuer.claims(iat=now - 900, exp=now - 300)),
        "not_yet_valid": signing.sign(issuer.claims(nbf=now + 300)),
        "bad_signature": forger.sign(valid),
        "wrong_audience": signing.sign(issuer.claims(aud="someone-else")),
        "wrong_issuer": signing.sign(issuer.claims(iss="https://evil.example.com")),
        "algorithm_not_accepted": handmade({"alg": "none", "kid": signing.kid}, valid, None),
        "unknown_key": signing.sign(valid, kid="no-such-key"),
        "malformed": "not-a-jwt",
        "missing_claim": signing.sign(issuer.claims(exp=None)),
    }
    said = {
        "expired": "expired",
        "not_yet_valid": "not valid yet",
        "bad_signature": "signature",
        "wrong_audience": "audience",
        "wrong_issuer": "issuer",
        "algorithm_not_accepted": "algorithm",
        "unknown_key": "key id",
        "malformed": "not a JWT",
        "missing_claim": "'exp'",
    }
    confusion = handmade({"alg": "HS256", "typ": "JWT", "kid": signing.kid}, valid, public)
    for reason, token in [*cases.items(), ("algorithm_not_accepted", confusion)]:
        answer = await http.get("/v1/sessions", headers=bearer(token))
        refused = problem_of(answer, 401, "AuthError")
        assert refused["reason"] == reason and said[reason] in refused["detail"], refused
        challenge = answer.headers["WWW-Authenticate"]
        assert challenge.startswith('Bearer error="invalid_token", error_description="')
        assert "BEGIN" not in answer.text and signing.jwk["n"] not in answer.text


async def test_an_identity_claim_that_is_missing_or_not_a_string_is_refused(
    http: httpx.AsyncClient, issuer: Issuer, signing: Key
):
    for sub in (None, 42, ["alice"], ""):
        token = signing.sign(issuer.claims(sub=sub))
        refused = problem_of(
            await http.get("/v1/sessions", headers=bearer(token)), 401, "AuthError"
        )
        assert refused["reason"] == "missing_claim" and "'sub'" in refused["detail"]


async def test_unknown_key_ids_do_not_refetch_the_keys_within_the_cooldown(
    http: httpx.AsyncClient, issuer: Issuer, signing: Key
):
    assert (
        await http.get("/v1/sessions", headers=bearer(signing.sign(issuer.claims())))
    ).is_success
    for n in range(3):
        token = signing.sign(issuer.claims(), kid=f"made-up-{n}")
        answer = await http.get("/v1/sessions", headers=bearer(token))
        assert problem_of(answer, 401, "AuthError")["reason"] == "unknown_key"
    assert issuer.fetches["jwks"] == 1


async def test_a_key_newly_published_is_accepted_within_the_refresh_cooldown(
    agent_client: AgentClient, issuer: Issuer, signing: Key
):
    cooldown = 0.5
    auth = JwtAuth(
        issuer=issuer.url,
        audience=AUDIENCE,
        algorithms=["RS256", "ES256"],
        refresh_cooldown=cooldown,
    )
    async with serve(create_app(agent_client, auth=auth)) as http:
        assert (
            await http.get("/v1/sessions", headers=bearer(signing.sign(issuer.claims())))
        ).is_success
        rotated = Key("key-2", "ES256")
        issuer.keys.append(rotated)
        published = time.monotonic()
        token = rotated.sign(issuer.claims(sub="carol"))
        while (answer := await http.get("/v1/sessions", headers=bearer(token))).status_code == 401:
            assert answer.json()["reason"] == "unknown_key"
            assert issuer.fetches["jwks"] == 1, "refetched only once the cooldown passed"
            assert time.monotonic() - published < cooldown + 5, "never accepted"
            # Wait out the cooldown that the last fetch started (as the server saw it).
            await asyncio.sleep(max(0.01, issuer.last_jwks_fetch + cooldown - time.monotonic()))
        assert answer.status_code == 200, answer.text
        assert issuer.fetches["jwks"] == 2


async def test_fetching_the_keys_does_not_block_other_requests(
    http: httpx.AsyncClient, issuer: Issuer, signing: Key
):
    issuer.hold()
    signed_in = asyncio.create_task(
        http.get("/v1/sessions", headers=bearer(signing.sign(issuer.claims())))
    )
    assert await asyncio.to_thread(issuer.held.wait, 30)
    health = await http.get("/healthz")
    assert health.status_code == 200 and issuer.held.is_set(), "answered while keys load"
    issuer.release()
    assert (await signed_in).status_code == 200


async def test_held_keys_answer_at_once_while_a_fetch_for_an_unknown_key_hangs(
    agent_client: AgentClient, issuer: Issuer, signing: Key
):
    auth = JwtAuth(issuer=issuer.url, audience=AUDIENCE, refresh_cooldown=0)
    valid = bearer(signing.sign(issuer.claims()))
    async with serve(create_app(agent_client, auth=auth)) as http:
        assert (await http.get("/v1/sessions", headers=valid)).status_code == 200
        issuer.hold()
        made_up = bearer(signing.sign(issuer.claims(), kid="made-up"))  # no valid signature
        stranger = asyncio.create_task(http.get("/v1/sessions", headers=made_up))
        assert await asyncio.to_thread(issuer.held.wait, 30)
        started = time.monotonic()
        answers = await asyncio.gather(*(http.get("/v1/sessions", headers=valid) for _ in "abc"))
        assert [answer.status_code for answer in answers] == [200] * 3
        assert issuer.held.is_set(), "answered while the fetch still hangs"
        assert time.monotonic() - started < 4  # the fetch hangs 5 s
        issuer.release()
        assert problem_of(await stranger, 401, "AuthError")["reason"] == "unknown_key"
    assert issuer.arrived["jwks"] == 2


@pytest.mark.parametrize("hung", ["discovery", "jwks"])
async def test_requests_that_need_the_keys_share_one_fetch_bounded_by_its_timeout(
    agent_client: AgentClient, issuer: Issuer, signing: Key, hung: str
):
    auth = JwtAuth(issuer=issuer.url, audience=AUDIENCE, timeout=1)
    valid = bearer(signing.sign(issuer.claims()))
    issuer.hold(hung)  # for 5 s: each request fetching in turn would take 4 x 1 s
    async with serve(create_app(agent_client, auth=auth)) as http:
        started = time.monotonic()
        answers = await asyncio.gather(*(http.get("/v1/sessions", headers=valid) for _ in "abcd"))
        assert time.monotonic() - started < 3.5
        for answer in answers:
            problem_of(answer, 503, "IssuerUnavailable")
        assert issuer.arrived[hung] == 1
        issuer.release()  # a failed fetch starts the cooldown too: no fetch before it ends
        problem_of(await http.get("/v1/sessions", headers=valid), 503, "IssuerUnavailable")
    assert issuer.arrived[hung] == 1


async def test_while_the_provider_fails_made_up_key_ids_are_a_401_fetched_once_per_cooldown(
    agent_client: AgentClient, issuer: Issuer, signing: Key
):
    cooldown = 2.0
    auth = JwtAuth(issuer=issuer.url, audience=AUDIENCE, refresh_cooldown=cooldown)
    made_up = [bearer(signing.sign(issuer.claims(), kid=f"made-up-{n}")) for n in range(20)]
    async with serve(create_app(agent_client, auth=auth)) as http:
        valid = bearer(signing.sign(issuer.claims()))
        assert (await http.get("/v1/sessions", headers=valid)).status_code == 200
        issuer.failing = True
        while issuer.arrived["jwks"] == 1:  # until the cooldown passes and one refetch fails
            await asyncio.sleep(max(0.01, issuer.last_jwks_fetch + cooldown - time.monotonic()))
            answer = await http.get("/v1/sessions", headers=made_up[0])
            assert problem_of(answer, 401, "AuthError")["reason"] == "unknown_key"
        started = time.monotonic()
        for headers in made_up:
            answer = await http.get("/v1/sessions", headers=headers)
            assert problem_of(answer, 401, "AuthError")["reason"] == "unknown_key"
        assert (await http.get("/v1/sessions", headers=valid)).status_code == 200
    assert time.monotonic() - started < cooldown, "the machine was too slow to tell"
    assert issuer.arrived["jwks"] == 2


async def test_keys_past_their_age_are_still_used_while_the_provider_fails(
    agent_client: AgentClient, issuer: Issuer, signing: Key, monkeypatch: pytest.MonkeyPatch
):
    auth = JwtAuth(issuer=issuer.url, audience=AUDIENCE, refresh_cooldown=0)
    monkeypatch.setattr(auth.keys, "max_age", 0.0)  # as 5 minutes after the last fetch
    valid = bearer(signing.sign(issuer.claims()))
    async with serve(create_app(agent_client, auth=auth)) as http:
        assert (await http.get("/v1/sessions", headers=valid)).status_code == 200
        issuer.failing = True
        deadline = time.monotonic() + 30
        while issuer.arrived["jwks"] < 4:  # three refreshes in the background, all failed
            assert (await http.get("/v1/sessions", headers=valid)).status_code == 200
            assert time.monotonic() < deadline, "the refresh is not retried"
        issuer.failing = False
        while issuer.fetches["jwks"] < 2:  # until a refresh succeeds
            assert (await http.get("/v1/sessions", headers=valid)).status_code == 200
            assert time.monotonic() < deadline, "the refresh is not retried"


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"algorithms": ["none"]}, "'none' is unsigned"),
        ({"algorithms": ["RS256", "HS256"]}, "shared secret"),
        ({"algorithms": "RS256"}, "a list"),
        ({"audience": ""}, "audience"),
        ({"audience": []}, "audience"),
        ({"issuer": "http://login.example.com"}, "https://"),
        ({"issuer": ""}, "issuer="),
        ({"issuer": "", "jwks_url": "https://login.example.com/jwks"}, "issuer="),
        ({"jwks_url": "file:///etc/passwd"}, "https://"),
        ({"operator_value": "ops"}, "operator_claim"),
        ({"refresh_cooldown": -1}, "refresh_cooldown"),
        ({"leeway": float("inf")}, "leeway"),
    ],
)
def test_a_configuration_that_would_accept_forged_tokens_is_refused(
    options: dict[str, Any], said: str
):
    settings: dict[str, Any] = {"issuer": "https://login.example.com/", "audience": AUDIENCE}
    with pytest.raises(ConfigurationError, match=said):
        JwtAuth(**{**settings, **options})


ISSUER = ["--jwt-issuer", "https://login.example.com/"]
JWT_FLAGS = [*ISSUER, "--jwt-audience", AUDIENCE]


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        ([*JWT_FLAGS, "--jwt-algorithms", "none"], "'none' is unsigned"),
        ([*JWT_FLAGS, "--jwt-algorithms", "RS256,HS256"], "shared secret"),
        (ISSUER, "--jwt-audience"),
        ([*JWT_FLAGS, "--operator-value", "ops"], "--operator-claim"),
        ([*JWT_FLAGS, "--no-auth"], "--no-auth"),
        ([*JWT_FLAGS, "--jwks-refresh-cooldown", "-1"], "cooldown"),
        ([*JWT_FLAGS, "--jwks-url", "http://idp.example.com/jwks"], "https://"),
        (["--jwks-url", "https://idp.example.com/jwks"], "need --jwt-issuer"),
        ([*JWT_FLAGS, "--operators", "alice"], "--operator-claim"),
    ],
)
def test_ratchet_web_refuses_jwt_flags_that_do_not_fit_before_it_connects(
    flags: list[str], said: str, capsys: pytest.CaptureFixture[str]
):
    assert cli.main(["web", *flags]) == 1
    assert said in capsys.readouterr().err


async def test_ratchet_web_operators_names_the_static_tokens_that_are_operators(
    monkeypatch: pytest.MonkeyPatch,
):
    alice, bob = "a" * 20, "b" * 20
    monkeypatch.setenv("RATCHET_WEB_TOKENS", f"alice:{alice},bob:{bob}")
    monkeypatch.setenv("RATCHET_WEB_OPERATORS", "bob")
    auth = auth_from(cli.build_parser().parse_args(["web"]))
    assert isinstance(auth, TokenAuth)
    async with whoami(auth) as client:
        assert (await client.get("/me", headers=bearer(alice))).json()["operator"] is False
        assert (await client.get("/me", headers=bearer(bob))).json()["operator"] is True
    flagged = auth_from(cli.build_parser().parse_args(["web", "--operators", "alice, carol"]))
    async with whoami(flagged) as client:
        assert (await client.get("/me", headers=bearer(alice))).json()["operator"] is True


async def test_keys_out_of_reach_are_a_503_to_retry_not_a_401(
    agent_client: AgentClient, issuer: Issuer, signing: Key
):
    token = signing.sign(issuer.claims())
    closed = f"http://127.0.0.1:{free_port()}/jwks.json"  # nothing listens there
    misnamed = issuer.url + "/"  # discovery names the issuer without the slash
    for auth in (
        JwtAuth(issuer=issuer.url, audience=AUDIENCE, jwks_url=closed, timeout=5),
        JwtAuth(issuer=misnamed, audience=AUDIENCE, timeout=5),
    ):
        async with serve(create_app(agent_client, auth=auth)) as http:
            answer = await http.get("/v1/sessions", headers=bearer(token))
            unavailable = problem_of(answer, 503, "IssuerUnavailable")
            assert answer.headers["Retry-After"] == "5"
            assert "identity provider" in unavailable["detail"] or "issuer" in unavailable["detail"]
    assert issuer.fetches == {"discovery": 1, "jwks": 0}


async def test_a_provider_down_at_start_is_fetched_again_soon_not_after_the_cooldown(
    agent_client: AgentClient, issuer: Issuer, signing: Key, monkeypatch: pytest.MonkeyPatch
):
    """With no keys held nobody can sign in, so the refetch comes after Retry-After
    (UNAVAILABLE_RETRY, shortened here), not after the 10-minute cooldown."""
    monkeypatch.setattr(jwks, "UNAVAILABLE_RETRY", 0.2)
    auth = JwtAuth(issuer=issuer.url, audience=AUDIENCE, refresh_cooldown=600)
    token = bearer(signing.sign(issuer.claims()))
    issuer.failing = True
    async with serve(create_app(agent_client, auth=auth)) as http:
        problem_of(await http.get("/v1/sessions", headers=token), 503, "IssuerUnavailable")
        assert issuer.arrived["jwks"] == 1
        issuer.failing = False
        deadline = time.monotonic() + 30
        while (answer := await http.get("/v1/sessions", headers=token)).status_code == 503:
            assert time.monotonic() < deadline, "the keys were not fetched again"
            await asyncio.sleep(0.05)  # the retry interval is what is tested
        assert answer.status_code == 200
    assert issuer.fetches["jwks"] == 1


async def test_ratchet_web_signs_callers_in_with_the_jwt_flags(
    temporal_server: DevServer, issuer: Issuer, signing: Key
):
    port = free_port()
    argv = [sys.executable, "-m", "ratchet.cli", "web", "--port", str(port)]
    argv += ["--jwt-issuer", issuer.url, "--jwt-audience", AUDIENCE]
    argv += ["--operator-claim", "roles", "--operator-value", "ratchet-operator"]
    env = {"RATCHET_WEB_TOKENS": ""}  # not needed: the JWT flags replace static tokens
    process = ChildProcess(argv, temporal_server, env=env, cwd=ROOT)
    try:
        process.wait_for("ratchet web on")
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            token = signing.sign(issuer.claims(roles=["ratchet-operator"]))
            assert (await http.get("/v1/sessions", headers=bearer(token))).status_code == 200
            expired = signing.sign(issuer.claims(exp=int(time.time()) - 300))
            refused = problem_of(
                await http.get("/v1/sessions", headers=bearer(expired)), 401, "AuthError"
            )
            assert refused["reason"] == "expired"
    finally:
        process.stop()
    assert issuer.fetches == {"discovery": 1, "jwks": 1}
