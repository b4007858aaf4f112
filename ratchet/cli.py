"""The ``ratchet`` command line: server, worker, run, chat, sessions, demo."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import tempfile
from pathlib import Path

from temporalio.client import WorkflowQueryFailedError, WorkflowUpdateFailedError
from temporalio.service import RPCError

from ratchet._exit import hard_exit
from ratchet.cli_sessions import (
    add_connection_arguments,
    add_session_commands,
    chat,
    connect,
    sessions_command,
)
from ratchet.cli_setup import add_setup_command, setup
from ratchet.cli_watch import add_watch_command, watch
from ratchet.codec import generate_key
from ratchet.codec_server import add_codec_server_arguments
from ratchet.codec_server import serve_command as serve_codec
from ratchet.devserver import DevServer, port_is_free
from ratchet.errors import RatchetError, RunFailedError
from ratchet.worker import add_worker_arguments, run_worker_command
from ratchet.workflows import AgentClient, RunOptions


def entry() -> None:
    """The ``ratchet`` console script."""
    hard_exit(main())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ratchet", description="Durable agents on Temporal.")
    commands = parser.add_subparsers(dest="command", required=True)

    server = commands.add_parser("server", help="run the embedded Temporal dev server and Web UI")
    server.add_argument("--port", type=int, default=7233)
    server.add_argument("--ui-port", type=int, default=8233)
    server.add_argument("--db-file", type=Path, help="keep state in this SQLite file")
    server.add_argument(
        "--codec-endpoint", help="codec server URL the Web UI decodes payloads with"
    )

    add_worker_arguments(commands.add_parser("worker", help="run a worker hosting agents"))

    run = commands.add_parser("run", help="run an agent on a prompt and print its answer")
    run.add_argument("agent")
    run.add_argument("prompt")
    run.add_argument(
        "--address", help="Temporal address (default: TEMPORAL_ADDRESS or localhost:7233)"
    )
    run.add_argument("--namespace")
    run.add_argument("--task-queue", default="ratchet")
    run.add_argument("--max-turns", type=int, default=RunOptions().max_turns)
    run.add_argument("--ui-url", help="Temporal Web UI base URL (default: RATCHET_UI_URL)")

    add_session_commands(commands)
    add_setup_command(commands)

    add_codec_server_arguments(
        commands.add_parser("codec-server", help="serve the payload codec to the Web UI and CLI")
    )
    codec_key = commands.add_parser("codec-key", help="print a new RATCHET_ENCRYPTION_KEYS entry")
    codec_key.add_argument("--id", help="key id (default: k<date>-<random>)")

    add_connection_arguments(add_watch_command(commands))

    demo = commands.add_parser("demo", help="show a run surviving a killed worker")
    demo.add_argument("--keep", action="store_true", help="keep the server and UI up afterwards")

    args = parser.parse_args(argv)
    try:
        if args.command == "server":
            return serve_dev_server(args)
        if args.command == "worker":
            return run_worker_command(args)
        if args.command == "run":
            return asyncio.run(run_once(args))
        if args.command == "chat":
            return asyncio.run(chat(args))
        if args.command == "watch":
            return asyncio.run(watch_command(args))
        if args.command == "sessions":
            return asyncio.run(sessions_command(args))
        if args.command == "setup":
            return asyncio.run(setup(args))
        if args.command == "codec-server":
            return serve_codec(args)
        if args.command == "codec-key":
            print(generate_key(args.id))
            return 0
        from ratchet.demo import run_demo

        state_dir = Path(tempfile.mkdtemp(prefix="ratchet-demo-"))
        return asyncio.run(run_demo(args.keep, state_dir))
    except RatchetError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except (RPCError, WorkflowUpdateFailedError, WorkflowQueryFailedError) as e:
        cause = getattr(e, "cause", None)
        print(f"error: {getattr(cause, 'message', None) or e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


async def watch_command(args: argparse.Namespace) -> int:
    client = await connect(args)
    return await watch(client.temporal, args)


def serve_dev_server(args: argparse.Namespace) -> int:
    for port in (args.port, args.ui_port):
        if not port_is_free(port):
            print(
                f"error: port {port} is in use; pick another with --port / --ui-port.",
                file=sys.stderr,
            )
            return 2
    with DevServer.start(
        port=args.port,
        ui_port=args.ui_port,
        db_path=args.db_file,
        codec_endpoint=args.codec_endpoint,
    ) as server:
        print(f"Temporal dev server on {server.address}; Web UI at {server.ui_url}")
        print(f"log: {server.log_path}. Press Ctrl-C to stop.", flush=True)
        received: list[int] = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda s, _f: received.append(s))
        while not received and server.process is not None and server.process.poll() is None:
            signal.sigtimedwait([signal.SIGINT, signal.SIGTERM], 1.0)
        code = server.process.returncode if server.process and server.process.poll() else 0
    return code or 0


def default_ui_url(address: str | None) -> str | None:
    explicit = os.environ.get("RATCHET_UI_URL")
    if explicit:
        return explicit
    host = (address or os.environ.get("TEMPORAL_ADDRESS") or "localhost:7233").rsplit(":", 1)
    if host[0] in ("localhost", "127.0.0.1") and host[-1] == "7233":
        return f"http://{host[0]}:8233"
    return None


async def run_once(args: argparse.Namespace) -> int:
    client = await AgentClient.connect(
        args.address,
        namespace=args.namespace,
        task_queue=args.task_queue,
        ui_url=args.ui_url or default_ui_url(args.address),
    )
    handle = await client.start_run(
        args.agent, args.prompt, options=RunOptions(max_turns=args.max_turns)
    )
    print(f"workflow: {handle.id}", flush=True)
    if handle.ui_url:
        print(f"ui: {handle.ui_url}", flush=True)
    try:
        result = await handle.result()
    except RunFailedError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"turns: {result.turns} · tokens: {result.usage.total_tokens}")
    print(f"\n{result.output}")
    return 0


if __name__ == "__main__":
    entry()
