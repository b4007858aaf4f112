"""``ratchet worker``: a worker hosting the agents named by ``--agents``."""

from __future__ import annotations

import argparse
import math

AGENTS_ENV = "RATCHET_AGENTS"
DEMO_AGENTS = "ratchet.examples:AGENTS"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
MAX_SECONDS = 10**9  # about 31 years: within timedelta's range
DEFAULT_GRACE_PERIOD = 20.0
"""Seconds a stopping worker gives its turns in flight (``build_worker``'s default too).
Docker Compose (``stop_grace_period``) and Kubernetes (``terminationGracePeriodSeconds``)
kill a container 30 s after SIGTERM by default; the last 10 s are for cancelling what
is still running, reporting it, closing resources and flushing traces."""


def register(commands: argparse._SubParsersAction) -> None:
    add_worker_arguments(commands.add_parser("worker", help="run a worker hosting agents"))


def add_worker_arguments(parser: argparse.ArgumentParser) -> None:
    from .common import add_connection_arguments

    parser.add_argument(
        "--agents",
        metavar="MODULE:ATTR",
        help="the dict of agents to host, name -> Agent or factory, e.g. "
        f"myapp.agents:AGENTS (default: ${AGENTS_ENV}; the demo's: {DEMO_AGENTS})",
    )
    add_connection_arguments(parser, queue_help="the task queue this worker polls")
    parser.add_argument(
        "--max-concurrent-turns", type=int, default=50, help="turns and tools run at once"
    )
    parser.add_argument(
        "--grace-period",
        type=seconds,
        default=DEFAULT_GRACE_PERIOD,
        metavar="SECONDS",
        help="on SIGTERM or SIGINT, how long turns in flight get to finish before they are "
        "cancelled and retried on another worker from their checkpoints "
        f"(default: {DEFAULT_GRACE_PERIOD:g}); give the orchestrator's own grace period "
        "(compose's stop_grace_period, Kubernetes' terminationGracePeriodSeconds) 10 s more",
    )
    parser.add_argument(
        "--metrics-address",
        help="serve Prometheus metrics on HOST:PORT at /metrics "
        "(default: RATCHET_METRICS_ADDRESS; none: off)",
    )
    add_log_level(
        parser,
        "WARNING shows tools that raised and failed turns; INFO adds "
        "the errors tools report on purpose (ToolError)",
    )
    parser.set_defaults(func=run_worker)


def add_log_level(parser: argparse.ArgumentParser, shows: str = "") -> None:
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=LOG_LEVELS,
        default="WARNING",
        help=f"least severe log records printed (default: WARNING){'; ' if shows else ''}{shows}",
    )


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= MAX_SECONDS:  # NaN fails too
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a finite number of seconds >= 0 (e.g. 20; 0 cancels turns at once)"
        )
    return value


def run_worker(args: argparse.Namespace) -> int:
    from ratchet.worker import run_worker_command

    return run_worker_command(args)
