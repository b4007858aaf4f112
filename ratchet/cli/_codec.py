"""``ratchet codec-server`` and ``ratchet codec-key``: payload encryption helpers."""

from __future__ import annotations

import argparse


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
    from ratchet.payloads._codec_server import serve_command

    return serve_command(args)


def new_key(args: argparse.Namespace) -> int:
    from ratchet.payloads._encryption import generate_key

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
