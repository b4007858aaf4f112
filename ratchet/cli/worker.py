"""``ratchet worker``: a worker hosting the agents named by ``--agents``."""

from __future__ import annotations

import argparse

DEFAULT_AGENTS = "ratchet.examples:AGENTS"
DEFAULT_GRACE_PERIOD = 25.0
"""Seconds a stopping worker gives its turns in flight (``build_worker``'s default too):
under the 30 s that Docker Compose (``stop_grace_period``) and Kubernetes
(``terminationGracePeriodSeconds``) wait by default before they kill it."""


def register(commands: argparse._SubParsersAction) -> None:
    add_worker_arguments(commands.add_parser("worker", help="run a worker hosting agents"))


def add_worker_arguments(parser: argparse.ArgumentParser) -> None:
    from .common import add_connection_arguments

    parser.add_argument("--agents", default=DEFAULT_AGENTS, help="module:ATTR dict of agents")
    add_connection_arguments(parser)
    parser.add_argument("--max-concurrent-turns", type=int, default=50)
    parser.add_argument(
        "--grace-period",
        type=seconds,
        default=DEFAULT_GRACE_PERIOD,
        metavar="SECONDS",
        help="on SIGTERM or SIGINT, how long turns in flight get to finish before they are "
        "cancelled and retried on another worker from their checkpoints "
        f"(default: {DEFAULT_GRACE_PERIOD:g}; keep it under your orchestrator's own grace "
        "period, e.g. compose's stop_grace_period)",
    )
    parser.add_argument(
        "--metrics-address",
        help="serve Prometheus metrics on HOST:PORT at /metrics "
        "(default: RATCHET_METRICS_ADDRESS; none: off)",
    )
    parser.set_defaults(func=run_worker)


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:  # also NaN
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of seconds >= 0 (e.g. 25, or 0 to cancel at once)"
        )
    return value


def run_worker(args: argparse.Namespace) -> int:
    from ratchet.worker import run_worker_command

    return run_worker_command(args)
