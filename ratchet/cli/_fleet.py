"""``ratchet fleet``: the server-side limits of a turn queue, shared by every worker
(``limit``), and what the server says of it (``status``). See docs/fleet.md."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING

from ratchet.wire import FAIRNESS_WEIGHTS

from ._common import add_connection_arguments, connect

if TYPE_CHECKING:  # the command loads Temporal's protos only when it runs
    from ._fleet_queue import QueueReport

FAIRNESS = (
    "fairness: not reported by the server (Temporal 1.32 has no API for it). "
    "`ratchet server` and ratchet.devserver start with it on; a cluster needs dynamic "
    "config matching.useNewMatcher=true and matching.enableFairness=true; Temporal "
    "Cloud enables it per namespace (docs/fleet.md)."
)
QUEUE_HELP = "the queue the turns run on (RunOptions.task_queue; default: the workflows')"


def register(commands: argparse._SubParsersAction) -> None:
    fleet = commands.add_parser(
        "fleet", help="a turn queue's fleet-wide rate limit and statistics (docs/fleet.md)"
    )
    actions = fleet.add_subparsers(dest="action", required=True)
    limit = actions.add_parser(
        "limit", help="set the turns' dispatches per second, enforced by the server"
    )
    add_connection_arguments(limit, queue_help=QUEUE_HELP)
    rate = limit.add_mutually_exclusive_group(required=True)
    rate.add_argument("--rps", type=rate_value, help="turn starts (retries too) per second")
    rate.add_argument("--unset", action="store_true", help="remove the queue's limit")
    limit.add_argument(
        "--per-key",
        action="store_true",
        help="limit each fairness key (an owner, a tenant) to the rate, not the whole queue",
    )
    limit.add_argument("--reason", default="", help="why (the server keeps it with the limit)")
    limit.set_defaults(func=limit_command)
    weight = actions.add_parser(
        "weight", help="pin a fairness key's weight on the queue (above what runs ask for)"
    )
    add_connection_arguments(weight, queue_help=QUEUE_HELP)
    weight.add_argument("--key", required=True, help="the fairness key (an owner, a tenant, ...)")
    pinned = weight.add_mutually_exclusive_group(required=True)
    pinned.add_argument("--weight", type=weight_value, help="its share, 0.001 to 1000")
    pinned.add_argument("--unset", action="store_true", help="let the runs' own weights apply")
    weight.set_defaults(func=weight_command)
    status = actions.add_parser(
        "status", help="the queue's limit, backlog, dispatch rate and throttling"
    )
    add_connection_arguments(status, queue_help=QUEUE_HELP)
    status.add_argument(
        "--metrics",
        metavar="URL[,URL]",
        help="the workers' metrics endpoints (their --metrics-address): adds per fairness "
        "key turns started, their mean and p95 wait to start, and throttles",
    )
    status.set_defaults(func=status_command)


def rate_value(text: str) -> float:
    """An argparse type: a positive number of dispatches per second."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a rate: give dispatches per second above 0 (e.g. 2.5), "
            "or --unset to remove the limit"
        )
    return value


def weight_value(text: str) -> float:
    """An argparse type: a fairness weight Temporal accepts."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    least, most = FAIRNESS_WEIGHTS
    if not (math.isfinite(value) and least <= value <= most):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a weight: give a number from {least:g} to {most:g} "
            "(1 is the default share)"
        )
    return value


async def limit_command(args: argparse.Namespace) -> int:
    from ._fleet_queue import set_limit

    client = await connect(args)
    rps = None if args.unset else args.rps
    await set_limit(client.temporal, args.task_queue, rps, args.reason, per_key=args.per_key)
    queue, each = args.task_queue, "each fairness key: " if args.per_key else ""
    if args.unset:
        print(f"turn queue {queue!r}: {each}no rate limit (the server's default applies)")
    else:
        where = "per key, across every worker" if args.per_key else "across every worker"
        print(
            f"turn queue {queue!r}: {each}at most {args.rps:g} turn dispatches per second, {where}"
        )
    return 0


async def weight_command(args: argparse.Namespace) -> int:
    from ._fleet_queue import set_weights

    client = await connect(args)
    queue, key = args.task_queue, args.key
    if args.unset:
        await set_weights(client.temporal, queue, {}, [key])
        print(f"turn queue {queue!r}: key {key!r} takes the weight its runs ask for")
    else:
        await set_weights(client.temporal, queue, {key: args.weight}, [])
        print(f"turn queue {queue!r}: key {key!r} has weight {args.weight:g}, whatever runs ask")
    return 0


async def status_command(args: argparse.Namespace) -> int:
    from ._fleet_queue import describe

    client = await connect(args)
    report = await describe(client.temporal, args.task_queue)
    lines = status_lines(args.task_queue, report)
    if args.metrics:
        from ._fleet_metrics import key_lines, metrics_url, scrape

        urls = [metrics_url(u) for u in args.metrics.split(",") if u.strip()]
        lines += key_lines(await scrape(urls, args.task_queue))
    for line in lines:
        print(line)
    return 0


def status_lines(queue: str, report: QueueReport) -> list[str]:
    limit = (
        f"{report.limit:g}/s" + (f" ({report.reason})" if report.reason else "")
        if report.limit is not None
        else "none set"
    )
    lines = [
        f"turn queue {queue!r} (activity tasks), {report.pollers} poller(s)",
        f"  rate limit: {limit}; enforced: {report.effective:g}/s (from {report.source})",
        "  rate limit of each fairness key: "
        + (f"{report.key_limit:g}/s" if report.key_limit is not None else "none set"),
        f"  backlog: {report.backlog} turn(s), oldest {report.backlog_age:.1f}s",
        f"  dispatch rate: {report.dispatch_rate:.2f}/s; add rate: {report.add_rate:.2f}/s",
        f"  throttled by the rate limit now: {'yes' if report.limiting else 'no'}",
    ]
    if report.weights:
        weights = ", ".join(f"{k}={v:g}" for k, v in sorted(report.weights.items()))
        lines.append(f"  fairness weight overrides: {weights}")
    return [*lines, f"  {FAIRNESS}"]
