"""``ratchet codec-server`` and ``ratchet codec-key``: payload encryption helpers."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading


def register(commands: argparse._SubParsersAction) -> None:
    server = commands.add_parser(
        "codec-server", help="serve the payload codec to the Web UI and CLI"
    )
    add_codec_server_arguments(server)
    server.set_defaults(func=serve)
    key = commands.add_parser("codec-key", help="print a new RATCHET_ENCRYPTION_KEYS entry")
    key.add_argument("--id", help="key id (default: k<date>-<random>)")
    key.set_defaults(func=new_key)


def serve(args: argparse.Namespace) -> int:
    """``ratchet codec-server``: serve the RATCHET_ENCRYPTION_KEYS codec until SIGINT/SIGTERM."""
    from ratchet.errors import ConfigurationError
    from ratchet.payloads import CodecServer, EncryptionCodec

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s")
    codec = EncryptionCodec.from_env()
    token = None if args.no_auth else os.environ.get(args.token_env)
    if not args.no_auth and not token:
        raise ConfigurationError(
            f"{args.token_env} is not set: the codec server needs a bearer token. Set it "
            "(e.g. to the output of `python -c 'import secrets; print(secrets.token_urlsafe())'`)"
            ", or pass --no-auth to serve without one on a trusted machine."
        )
    if args.no_auth:
        print(
            "warning: --no-auth: anyone who can reach this port can decrypt payloads.",
            file=sys.stderr,
        )
    try:
        server = CodecServer(
            codec, token=token, ui_origin=args.ui_origin, host=args.host, port=args.port
        )
    except OSError as e:
        print(f"error: cannot listen on {args.host}:{args.port}: {e.strerror}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda _s, _f: stop.set())
    with server:
        print(
            f"codec server on {server.url} (keys: {', '.join(codec.key_ids)}; active "
            f"{codec.active}); CORS for {server.ui_origin}. Press Ctrl-C to stop.",
            flush=True,
        )
        while not stop.wait(1.0):
            pass
    print("codec server stopped.", flush=True)
    return 0


def new_key(args: argparse.Namespace) -> int:
    from ratchet.payloads import generate_key

    print(generate_key(args.id))
    return 0


def add_codec_server_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to bind")
    parser.add_argument("--port", type=int, default=8081, help="port to serve on")
    parser.add_argument(
        "--ui-origin",
        default="http://localhost:8233",
        help="the Web UI's origin, the only one given CORS headers (scheme://host:port)",
    )
    parser.add_argument(
        "--token-env",
        default="RATCHET_CODEC_TOKEN",
        help="environment variable holding the bearer token clients must send",
    )
    parser.add_argument(
        "--no-auth", action="store_true", help="accept requests without a token (local use only)"
    )
