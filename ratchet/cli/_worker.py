"""``ratchet worker``: a worker hosting the agents named by ``--agents``."""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import os
import sys
from collections.abc import Callable
from datetime import timedelta

from ratchet.process import DEFAULT_GRACE_PERIOD, DEFAULT_SERVER_WAIT

AGENTS_ENV = "RATCHET_AGENTS"
DEPLOYMENT_ENV = "RATCHET_DEPLOYMENT"
BUILD_ID_ENV = "RATCHET_BUILD_ID"
DEMO_AGENTS = "ratchet.examples:AGENTS"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
MAX_SECONDS = 10**9  # about 31 years: within timedelta's range


def register(commands: argparse._SubParsersAction) -> None:
    add_worker_arguments(commands.add_parser("worker", help="run a worker hosting agents"))


def add_worker_arguments(parser: argparse.ArgumentParser) -> None:
    from ._common import add_connection_arguments, at_least_one

    parser.add_argument(
        "--agents",
        metavar="MODULE:ATTR",
        help="the dict of agents to host, name -> Agent or factory, e.g. "
        f"myapp.agents:AGENTS (default: ${AGENTS_ENV}; the demo's: {DEMO_AGENTS})",
    )
    add_connection_arguments(parser, queue_help="the task queue this worker polls")
    add_workflows_argument(parser, "your own workflows this worker runs beside Ratchet's")
    parser.add_argument(
        "--max-concurrent-turns",
        type=at_least_one,
        default=50,
        metavar="N",
        help="turns and tools run at once (default: 50)",
    )
    parser.add_argument(
        "--rate-limited",
        action="store_true",
        help="take turns only through the server's task queue, never eagerly from the "
        "workflow task that scheduled them, so a `ratchet fleet limit` and fairness keys "
        "hold for every turn (costs about 50 ms a turn on a local server)",
    )
    parser.add_argument(
        "--grace-period",
        type=seconds("e.g. 20; 0 cancels turns at once"),
        default=DEFAULT_GRACE_PERIOD,
        metavar="SECONDS",
        help="on SIGTERM or SIGINT, how long turns in flight get to finish before they are "
        "cancelled and retried on another worker from their checkpoints "
        f"(default: {DEFAULT_GRACE_PERIOD:g}); give the orchestrator's own grace period "
        "(compose's stop_grace_period, Kubernetes' terminationGracePeriodSeconds) 10 s more",
    )
    parser.add_argument(
        "--deployment",
        metavar="NAME",
        default=os.environ.get(DEPLOYMENT_ENV),
        help="serve one build of this worker deployment (Temporal's worker versioning): "
        "each run stays on the build that started it, a session moves to a new build "
        f"between messages; with --build-id (default: ${DEPLOYMENT_ENV})",
    )
    parser.add_argument(
        "--build-id",
        metavar="ID",
        default=os.environ.get(BUILD_ID_ENV),
        help=f"this worker's build, e.g. a git commit (default: ${BUILD_ID_ENV}); "
        "make it current with `ratchet deploy promote`",
    )
    parser.add_argument(
        "--server-wait",
        type=seconds("e.g. 30; 0 exits at once when no server answers"),
        default=DEFAULT_SERVER_WAIT,
        metavar="SECONDS",
        help="when no Temporal server answers at start, keep trying this long before "
        f"exiting (default: {DEFAULT_SERVER_WAIT:g}; 0: exit at once)",
    )
    parser.add_argument(
        "--metrics-address",
        help="serve Prometheus metrics on HOST:PORT at /metrics "
        "(default: $RATCHET_METRICS_ADDRESS; none: off)",
    )
    add_log_level(
        parser,
        "WARNING shows tools that raised and failed turns; INFO adds "
        "the errors tools report on purpose (ToolError)",
    )
    parser.set_defaults(func=run_worker)


def add_workflows_argument(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--workflows",
        metavar="MODULE:ATTR",
        action="append",
        help=f"{what}: a @workflow.defn class or a list of them, e.g. "
        "myapp.workflows:WORKFLOWS (repeatable)",
    )


def add_log_level(parser: argparse.ArgumentParser, shows: str = "") -> None:
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=LOG_LEVELS,
        default="WARNING",
        help=f"least severe log records printed (default: WARNING){'; ' if shows else ''}{shows}",
    )


def seconds(example: str) -> Callable[[str], float]:
    """An argparse type: a finite number of seconds >= 0; ``example`` ends the error."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not 0 <= value <= MAX_SECONDS:  # NaN fails too
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a finite number of seconds >= 0 ({example})"
            )
        return value

    return parse


def run_worker(args: argparse.Namespace) -> int:
    from ratchet.errors import ConfigurationError
    from ratchet.evals import EvalsPlugin
    from ratchet.worker import load_agents, load_workflows, serve, versioned

    from ._common import is_connection_failure, no_server

    logging.basicConfig(
        level=getattr(args, "log_level", "WARNING"),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    spec = args.agents or os.environ.get(AGENTS_ENV)
    if not spec:  # never the demo's agents unasked: a worker hosts what it is told
        print(
            f"error: name the agents to host: --agents module:ATTR (or ${AGENTS_ENV}), a dict "
            f"of name -> Agent or factory, e.g. --agents myapp.agents:AGENTS; the demo's "
            f"agents are {DEMO_AGENTS}.",
            file=sys.stderr,
        )
        return 2
    if bool(args.deployment) != bool(args.build_id):
        given, missing = (
            ("--deployment", "--build-id") if args.deployment else ("--build-id", "--deployment")
        )
        print(
            f"error: {given} needs {missing} too: a versioned worker serves one build "
            "(--build-id) of one worker deployment (--deployment).",
            file=sys.stderr,
        )
        return 2
    try:
        deployment = versioned(args.deployment, args.build_id) if args.deployment else None
        agents = load_agents(spec)
        workflows = [w for spec in args.workflows or [] for w in load_workflows(spec)]
        asyncio.run(
            serve(
                agents,
                target=args.address,
                namespace=args.namespace,
                task_queue=args.task_queue,
                max_concurrent_turns=args.max_concurrent_turns,
                rate_limited=args.rate_limited,
                graceful_shutdown_timeout=timedelta(seconds=args.grace_period),
                metrics_address=args.metrics_address,
                plugins=[EvalsPlugin()],  # reruns of recorded runs and sessions
                deployment=deployment,
                workflows=workflows,
                server_wait=timedelta(seconds=args.server_wait),
            )
        )
    except (ConfigurationError, RuntimeError) as e:
        if is_connection_failure(e):
            return no_server(args, e)
        if not isinstance(e, ConfigurationError):
            raise
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0
