"""``ratchet web``: the HTTP API (``ratchet.web``) served with uvicorn."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import sys
from pathlib import Path

from ._common import add_connection_arguments, connect
from ._worker import add_log_level

LOOPBACK_NAMES = ("localhost",)


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
        "--no-auth", action="store_true", help="serve without tokens (loopback only; warns)"
    )
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

        from ratchet.web import TokenAuth, create_app
    except ImportError as e:
        print(
            f"error: ratchet web needs the web extra: pip install 'ratchet[web]' ({e})",
            file=sys.stderr,
        )
        return 2
    from ratchet.errors import ConfigurationError
    from ratchet.worker import load_agents

    if args.no_auth and not is_loopback(args.host):
        raise ConfigurationError(
            f"--no-auth serves anyone who reaches the port, so only on loopback, not on "
            f"{args.host}: set {args.tokens_env} instead."
        )
    auth = None if args.no_auth else TokenAuth.from_env(args.tokens_env)
    if auth is None:
        print("warning: --no-auth: anyone on this machine can use every session.", file=sys.stderr)
    agents = sorted(load_agents(args.agents)) if args.agents else None
    client = await connect(args)
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
