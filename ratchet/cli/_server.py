"""``ratchet server``: the Temporal dev server and Web UI, until Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path


def register(commands: argparse._SubParsersAction) -> None:
    server = commands.add_parser("server", help="run the embedded Temporal dev server and Web UI")
    server.add_argument(
        "--port", type=int, default=7233, help="the Temporal frontend's port (default: 7233)"
    )
    server.add_argument(
        "--ui-port", type=int, default=8233, help="the Web UI's port (default: 8233)"
    )
    server.add_argument("--ip", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    server.add_argument("--headless", action="store_true", help="no Web UI")
    server.add_argument("--db-file", type=Path, help="keep state in this SQLite file")
    server.add_argument(
        "--codec-endpoint", help="codec server URL the Web UI decodes payloads with"
    )
    server.add_argument(
        "--no-fairness",
        action="store_true",
        help="dispatch each queue's backlog in order, ignoring turns' fairness keys",
    )
    server.set_defaults(func=serve)


def serve(args: argparse.Namespace) -> int:
    from ratchet.devserver import DevServer, port_is_free

    ports = (args.port,) if args.headless else (args.port, args.ui_port)
    for port in ports:
        if not port_is_free(port):
            print(
                f"error: port {port} is in use; pick another with --port / --ui-port.",
                file=sys.stderr,
            )
            return 2
    # Blocked, the signals wait for sigtimedwait below instead of interrupting start-up.
    stop = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop)
    with DevServer.start(
        port=args.port,
        ui_port=None if args.headless else args.ui_port,
        ui=not args.headless,
        ip=args.ip,
        db_path=args.db_file,
        codec_endpoint=args.codec_endpoint,
        fairness=not args.no_fairness,
    ) as server:
        ui = f"; Web UI at {server.ui_url}" if server.ui_url else " (headless)"
        fairness = "off (--no-fairness)" if args.no_fairness else "on (docs/fleet.md)"
        print(f"Temporal dev server on {args.ip}:{server.port}{ui}; fairness {fairness}")
        if server.port != 7233:
            host: str = {"0.0.0.0": "127.0.0.1", "::": "[::1]"}.get(args.ip) or args.ip
            host = f"[{host}]" if ":" in host and not host.startswith("[") else host
            print(f"Clients and workers find it with TEMPORAL_ADDRESS={host}:{server.port}.")
        if args.ui_port != 8233 and not args.headless:
            print(f"Runs find this UI with RATCHET_UI_URL={server.ui_url} (or --ui-url).")
        print(f"log: {server.log_path}. Press Ctrl-C to stop.", flush=True)
        process = server.process
        while process is not None and process.poll() is None:
            if signal.sigtimedwait(list(stop), 0.5) is not None:
                break
        code = process.returncode if process is not None and process.poll() else 0
    return code or 0
