"""``ratchet worker``: a worker hosting the agents named by ``--agents``."""

from __future__ import annotations

import argparse

DEFAULT_AGENTS = "ratchet.examples:AGENTS"


def register(commands: argparse._SubParsersAction) -> None:
    add_worker_arguments(commands.add_parser("worker", help="run a worker hosting agents"))


def add_worker_arguments(parser: argparse.ArgumentParser) -> None:
    from .common import add_connection_arguments

    parser.add_argument("--agents", default=DEFAULT_AGENTS, help="module:ATTR dict of agents")
    add_connection_arguments(parser)
    parser.add_argument("--max-concurrent-turns", type=int, default=50)
    parser.add_argument(
        "--metrics-address",
        help="serve Prometheus metrics on HOST:PORT at /metrics "
        "(default: RATCHET_METRICS_ADDRESS; none: off)",
    )
    parser.set_defaults(func=run_worker)


def run_worker(args: argparse.Namespace) -> int:
    from ratchet.worker import run_worker_command

    return run_worker_command(args)
