"""``ratchet fleet``: the server-side limits of a turn queue, shared by every worker
(``limit``), and what the server says of it (``status``). See docs/fleet.md."""

from __future__ import annotations

import argparse
import math
import sys
from typing import TYPE_CHECKING

from ratchet.errors import ConfigurationError
from ratchet.wire import FAIRNESS_WEIGHTS, fairness_key

from ._common import add_connection_arguments, connect

if TYPE_CHECKING:  # the command loads Temporal's protos only when it runs
    from ._fleet_queue import QueueReport

FAIRNESS = (
    "fairness: not reported by the server (Temporal 1.32 has no API for it). "
    "`ratchet server` and ratchet.devserver start with it on; a cluster needs dynamic "
    "config matching.useNewMatcher=true and matching.enableFairness=true; Temporal "
    "Cloud enables it per namespace (docs/fleet.md)."
)
QUEUE_HELP = (
    "the queue the turns run on: their RunOptions.task_queue, or the workflows' queue "
    "when that is unset"
)
POLLERS = "worker(s) polled it lately (the server lists a stopped worker for a few minutes)"


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
        help="limit each fairness key (an owner, a tenant) to the rate, not the whole "
        "queue: a separate setting from the queue's limit, set and unset on its own",
    )
    limit.add_argument("--reason", help="why (the server keeps it with the limit)")
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
        type=metrics_urls,
        help="the workers' metrics endpoints (their --metrics-address): adds per fairness "
        "key turns started, their mean and p95 wait to start, and throttles; an endpoint "
        "that does not answer is named in a warning, and the exit status is 1 only when "
        "none does",
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


def metrics_urls(text: str) -> list[str]:
    """An argparse type: ``URL[,URL]``, at least one."""
    from ._fleet_metrics import metrics_url

    urls = [metrics_url(u) for u in text.split(",") if u.strip()]
    if not urls:
        raise argparse.ArgumentTypeError(
            f"{text!r} names no endpoint: give each worker's metrics endpoint, its "
            "--metrics-address (e.g. worker-1:9464,worker-2:9464)"
        )
    return urls


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
    from ._fleet_queue import describe, set_limit

    queue: str = args.task_queue  # argparse refuses a blank one
    client = await connect(args)
    rps = None if args.unset else args.rps
    await set_limit(client.temporal, queue, rps, args.reason or "", per_key=args.per_key)
    each = "each fairness key: " if args.per_key else ""
    if args.unset:
        print(f"turn queue {queue!r}: {each}no rate limit (the server's default applies)")
    else:
        where = "per key, across every worker" if args.per_key else "across every worker"
        print(
            f"turn queue {queue!r}: {each}at most {args.rps:g} turn dispatches per second, {where}"
        )
    report = await describe(client.temporal, queue)
    if rps is not None:
        warn_read_back(queue, rps, report, per_key=args.per_key)
    warn_unpolled(queue, report.pollers)
    return 0


SLOWEST_SENSIBLE = 1 / 3600
"""A rate under one dispatch an hour all but stops the queue: ``limit`` warns."""


def warn_read_back(queue: str, rps: float, report: QueueReport, *, per_key: bool) -> None:
    """Warn where the limit just set is not what turns will get."""
    if rps < SLOWEST_SENSIBLE:
        warn(
            f"at {rps:g}/s one turn starts every {1 / rps / 3600:,.0f} hours: turns on "
            f"{queue!r} all but stop (--unset removes the limit)"
        )
    if per_key:
        if report.key_limit is None or not math.isclose(report.key_limit, rps, rel_tol=1e-6):
            warn(f"the server holds {report.key_limit}/s per key on {queue!r}, not {rps:g}/s")
        elif rps > report.effective:
            warn(
                f"each key's {rps:g}/s is above what the whole queue gets "
                f"({report.effective:g}/s, from {report.source}): the queue's limit binds first"
            )
    elif not math.isclose(report.effective, rps, rel_tol=1e-6):
        warn(
            f"the server enforces {report.effective:g}/s on turn queue {queue!r} (from "
            f"{report.source}), not the {rps:g}/s set: its own cap is lower"
        )


async def weight_command(args: argparse.Namespace) -> int:
    from ._fleet_queue import describe, set_weights

    queue: str = args.task_queue  # argparse refuses a blank one
    client = await connect(args)
    key = fairness_key(args.key)
    if key != args.key:
        print(f"key {args.key!r} is stored as {key!r}: turns shorten a key over 64 bytes so")
    if args.unset:
        await set_weights(client.temporal, queue, {}, [key])
        print(f"turn queue {queue!r}: key {key!r} takes the weight its runs ask for")
    else:
        await set_weights(client.temporal, queue, {key: args.weight}, [])
        print(f"turn queue {queue!r}: key {key!r} has weight {args.weight:g}, whatever runs ask")
    warn_unpolled(queue, (await describe(client.temporal, queue)).pollers)
    return 0


async def status_command(args: argparse.Namespace) -> int:
    from ._fleet_queue import describe

    queue: str = args.task_queue  # argparse refuses a blank one
    client = await connect(args)
    report = await describe(client.temporal, queue)
    lines = status_lines(queue, report)
    warn_unpolled(queue, report.pollers, setting=False)
    if not args.metrics:
        print(*lines, sep="\n")
        return 0
    from ._fleet_metrics import figures_of, key_lines, scrape

    scraped = await scrape(args.metrics)
    if scraped.texts:
        lines += key_lines(figures_of(scraped.texts, queue))
    print(*lines, sep="\n")
    for unread in scraped.unread:
        warn(str(unread))
    if not scraped.texts:
        raise ConfigurationError("No metrics endpoint answered: see the warnings above.")
    return 0


def warn(text: str) -> None:
    print(f"warning: {text}", file=sys.stderr)


def warn_unpolled(queue: str, pollers: int, *, setting: bool = True) -> None:
    """A setting made before any worker polls the queue holds once they do: say so,
    in case the name is wrong (``setting=False``: a status, whose turns wait)."""
    if pollers:
        return
    then = (
        "the setting holds once workers start on it" if setting else "its turns wait until one does"
    )
    warn(
        f"no worker polls turn queue {queue!r} (yet): {then} "
        f"(ratchet worker --task-queue {queue}); check the name if none will"
    )


def status_lines(queue: str, report: QueueReport) -> list[str]:
    limit = (
        f"{report.limit:g}/s" + (f" ({report.reason})" if report.reason else "")
        if report.limit is not None
        else "none set"
    )
    key_limit = (
        f"{report.key_limit:g}/s" + (f" ({report.key_reason})" if report.key_reason else "")
        if report.key_limit is not None
        else "none set"
    )
    lines = [
        f"turn queue {queue!r} (activity tasks): {report.pollers} {POLLERS}",
        f"  rate limit: {limit}; enforced: {report.effective:g}/s (from {report.source})",
        f"  rate limit of each fairness key: {key_limit}",
        f"  backlog: {report.backlog} turn(s), oldest {report.backlog_age:.1f}s",
        f"  dispatch rate: {report.dispatch_rate:.2f}/s; add rate: {report.add_rate:.2f}/s",
        f"  turns held back by the rate limit now: {_held_back(report)}",
    ]
    if report.weights:
        weights = ", ".join(f"{k}={v:g}" for k, v in sorted(report.weights.items()))
        lines.append(f"  fairness weight overrides: {weights}")
    return [*lines, f"  {FAIRNESS}"]


def _held_back(report: QueueReport) -> str:
    """The server's ``rate_limiting_active`` stays on a while after the load ends:
    with no backlog, or no dispatches (no worker), nothing is held back by it."""
    if not report.backlog:
        return "no (no backlog)"
    if not report.dispatch_rate:  # the flag lingers; nothing is taken at all
        return "no (nothing dispatched; is any worker polling?)"
    return "yes" if report.limiting else "no"
