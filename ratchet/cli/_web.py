"""``ratchet web``: the HTTP API (``ratchet.web``) served with uvicorn."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._common import add_connection_arguments, connect
from ._worker import add_log_level

if TYPE_CHECKING:
    from ratchet.web import JwtAuth, TokenAuth

LOOPBACK_NAMES = ("localhost",)
OPERATORS_ENV = "RATCHET_WEB_OPERATORS"


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("web", help="serve sessions over HTTP (needs ratchet[web])")
    add_connection_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to serve on (default: 8000)")
    parser.add_argument(
        "--agents",
        help="module:ATTR naming the workers' agents (as for `ratchet worker`); sessions "
        "for any other agent are refused before they start",
    )
    parser.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        help="a browser origin allowed to call the API (scheme://host:port); repeatable",
    )
    parser.add_argument(
        "--tokens-env",
        default="RATCHET_WEB_TOKENS",
        help="environment variable holding 'identity:token' pairs, comma-separated",
    )
    parser.add_argument(
        "--operators",
        default=None,
        help="identities of static tokens that are operators (see and decide everything), "
        "comma-separated (default: $RATCHET_WEB_OPERATORS; with --jwt-issuer use --operator-claim)",
    )
    parser.add_argument(
        "--no-auth", action="store_true", help="serve without tokens (loopback only; warns)"
    )
    add_jwt_arguments(parser)
    parser.add_argument(
        "--max-body",
        type=int,
        default=8 << 20,
        help="bytes a request body may hold (default 8 MiB: AG-UI clients send the whole "
        "conversation with every message)",
    )
    parser.add_argument(
        "--max-message",
        type=int,
        default=256 << 10,
        help="bytes of message text one send may add (default 256 KiB)",
    )
    parser.add_argument(
        "--reports",
        help="a directory of evaluation reports (`ratchet eval ... --out DIR/NAME`) to show",
    )
    parser.add_argument(
        "--report-readers",
        default=os.environ.get("RATCHET_WEB_REPORT_READERS", ""),
        help="identities that may read them, comma-separated (they quote conversations; "
        "default: $RATCHET_WEB_REPORT_READERS)",
    )
    add_log_level(parser)
    parser.set_defaults(func=serve)


def add_jwt_arguments(parser: argparse.ArgumentParser) -> None:
    jwt = parser.add_argument_group(
        "sign-in with an identity provider (JWT bearer tokens; replaces static tokens)"
    )
    jwt.add_argument("--jwt-issuer", help="the issuer (iss) URL; its OIDC discovery finds keys")
    jwt.add_argument("--jwt-audience", help="the audience (aud) tokens must be issued for")
    jwt.add_argument("--jwks-url", help="the issuer's JWKS (default: from OIDC discovery)")
    jwt.add_argument(
        "--jwt-algorithms", default="RS256", help="accepted algorithms, comma-separated"
    )
    jwt.add_argument("--identity-claim", default="sub", help="the claim naming the caller")
    jwt.add_argument("--operator-claim", help="the claim that makes an operator (true, or ...)")
    jwt.add_argument("--operator-value", help="... a value it equals or contains")
    jwt.add_argument("--tenant-claim", help="the claim naming the caller's tenant (required)")
    jwt.add_argument(
        "--jwt-leeway", type=float, default=30.0, help="seconds of clock skew on exp and nbf"
    )
    jwt.add_argument(
        "--jwks-refresh-cooldown",
        type=float,
        default=30.0,
        help="seconds between refetches of the keys for an unknown key id",
    )


def jwt_auth(args: argparse.Namespace) -> JwtAuth:
    """``JwtAuth`` from the ``--jwt-*`` flags; raises ``ConfigurationError``."""
    from ratchet.errors import ConfigurationError
    from ratchet.web import JwtAuth

    if args.no_auth:
        raise ConfigurationError(
            "--jwt-issuer signs callers in; --no-auth lets anyone in: choose one."
        )
    if not args.jwt_audience:
        raise ConfigurationError(
            "--jwt-issuer needs --jwt-audience: the audience (aud) the identity provider "
            "issues this API's tokens for."
        )
    if args.operator_value and not args.operator_claim:
        raise ConfigurationError("--operator-value needs --operator-claim: the claim it is in.")
    if args.operators is not None:
        raise ConfigurationError(
            "--operators names static tokens' identities; with --jwt-issuer the identity "
            "provider says who is an operator: use --operator-claim (and --operator-value)."
        )
    if os.environ.get(OPERATORS_ENV):
        logging.getLogger(__name__).warning(
            "%s is ignored with --jwt-issuer: operators are the callers whose token has "
            "--operator-claim.",
            OPERATORS_ENV,
        )
    return JwtAuth(
        issuer=args.jwt_issuer,
        audience=args.jwt_audience,
        jwks_url=args.jwks_url,
        algorithms=split(args.jwt_algorithms),
        identity_claim=args.identity_claim,
        operator_claim=args.operator_claim,
        operator_value=args.operator_value,
        tenant_claim=args.tenant_claim,
        leeway=args.jwt_leeway,
        refresh_cooldown=args.jwks_refresh_cooldown,
    )


def split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def auth_from(args: argparse.Namespace) -> JwtAuth | TokenAuth | None:
    """The app's ``auth``: JWTs with ``--jwt-issuer``, else static tokens, or none."""
    from ratchet.errors import ConfigurationError
    from ratchet.web import TokenAuth

    if args.jwt_issuer:
        return jwt_auth(args)
    if args.jwks_url or args.jwt_audience:
        raise ConfigurationError("--jwks-url and --jwt-audience need --jwt-issuer.")
    if args.no_auth and not is_loopback(args.host):
        raise ConfigurationError(
            f"--no-auth serves anyone who reaches the port, so only on loopback, not on "
            f"{args.host}: set {args.tokens_env} instead."
        )
    if args.no_auth:
        return None
    operators = os.environ.get(OPERATORS_ENV, "") if args.operators is None else args.operators
    return TokenAuth.from_env(args.tokens_env, operators=split(operators))


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from ratchet.web import create_app
    except ImportError as e:
        print(
            f"error: ratchet web needs the web extra: pip install 'ratchet[web]' ({e})",
            file=sys.stderr,
        )
        return 2
    from ratchet.worker import load_agents

    auth = auth_from(args)
    if auth is None:
        print("warning: --no-auth: anyone on this machine can use every session.", file=sys.stderr)
    agents = sorted(load_agents(args.agents)) if args.agents else None
    client = await connect(args)
    if auth is not None:  # each caller's sessions are found by these: none, no owners
        await _check_search_attributes(client)
    readers = [r.strip() for r in args.report_readers.split(",") if r.strip()]
    if args.reports and auth is not None and not readers:
        print("warning: --reports without --report-readers: nobody may read them.", file=sys.stderr)
    app = create_app(
        client,
        auth=auth,
        agents=agents,
        cors_origins=args.cors_origin,
        max_body=args.max_body,
        max_message=args.max_message,
        reports=Path(args.reports) if args.reports else None,
        report_readers=readers,
    )
    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level.lower(),
        timeout_graceful_shutdown=5,
    )
    url = f"http://{args.host}:{args.port}"

    class Server(uvicorn.Server):
        async def startup(self, sockets: list | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                print(f"ratchet web on {url} (API docs at {url}/docs)", flush=True)

    await Server(config).serve()
    return 0


async def _check_search_attributes(client: Any) -> None:
    from temporalio.service import RPCError

    from ratchet.client import missing_search_attributes
    from ratchet.errors import ConfigurationError

    try:
        missing = await missing_search_attributes(client.temporal)
    except RPCError as e:  # a key that may not read them (Temporal Cloud): checked at start
        print(f"warning: could not list the namespace's search attributes: {e}", file=sys.stderr)
        return
    if missing:
        names = ", ".join(key.name for key in missing)
        raise ConfigurationError(
            f"Namespace {client.temporal.namespace!r} lacks the search attributes {names}, "
            "which ratchet web records and filters each caller's sessions by: run "
            "`ratchet setup` once on the namespace, then start ratchet web again."
        )
