"""``ratchet schedules ...``: agents on a cron or an interval (``AgentClient.schedule``)."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from ._common import add_connection_arguments, connect
from ._printing import table
from ._schedule_firings import backfill_command, instant, trigger_command

OVERLAPS = ("skip", "buffer_one", "buffer_all", "cancel_other", "terminate_other", "allow_all")
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_NOTE_BYTES = 1000  # Temporal refuses a longer note (ratchet.wire's MAX_NOTE_BYTES)
LONGEST = timedelta(seconds=315_576_000_000)
"""Temporal's longest duration (protobuf's: 10,000 years, 3652500d)."""


def duration(text: str) -> timedelta:
    """An argparse type: ``90``, ``90s``, ``15m``, ``1h`` or ``1d``."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration: give seconds or a number with s, m, h or d (15m)"
        )
    seconds = float(match[1]) * UNITS[match[2] or "s"]
    if seconds > LONGEST.total_seconds():
        raise argparse.ArgumentTypeError(
            f"{text} is longer than Temporal allows: at most 3652500d (10,000 years)"
        )
    return timedelta(seconds=seconds)


def overlap_name(text: str) -> str:
    """An argparse type: an overlap policy, as ``allow_all``, ``allow-all`` or ``ALLOW_ALL``."""
    return text.strip().lower().replace("-", "_")


def note_text(text: str) -> str:
    """An argparse type: a schedule's note, within Temporal's 1000 bytes."""
    size = len(text.encode())
    if size > MAX_NOTE_BYTES:
        raise argparse.ArgumentTypeError(
            f"the note is {size} bytes: Temporal takes at most {MAX_NOTE_BYTES}"
        )
    return text


def register(commands: argparse._SubParsersAction) -> None:
    schedules = commands.add_parser(
        "schedules", help="run agents, or message sessions, on a cron or an interval"
    )
    verbs = schedules.add_subparsers(dest="verb", required=True)
    create = verbs.add_parser("create", help="a new schedule (a Temporal Schedule)")
    create.add_argument("id", help="the schedule's id, e.g. morning-report")
    create.add_argument("prompt", help="what to send each time")
    does = create.add_mutually_exclusive_group(required=True)
    does.add_argument("--agent", help="start a run of this agent each time")
    does.add_argument("--session", help="send the prompt to this open session each time")
    when = create.add_mutually_exclusive_group(required=True)
    when.add_argument("--cron", action="append", help="e.g. '0 7 * * 1-5' (UTC; repeatable)")
    when.add_argument("--every", type=duration, help="an interval, e.g. 15m or 1h")
    create.add_argument(
        "--overlap",
        choices=OVERLAPS,
        type=overlap_name,
        default="skip",
        help="what a firing does while the previous one still runs",
    )
    create.add_argument(
        "--catchup",
        type=duration,
        default=timedelta(minutes=5),
        metavar="DURATION",
        help="how late a firing missed during an outage may still run (default: 5m)",
    )
    create.add_argument("--jitter", type=duration, help="a random delay up to this, per firing")
    create.add_argument("--paused", action="store_true", help="create it paused")
    create.add_argument("--note", type=note_text, help="a note shown with the schedule")
    create.set_defaults(func=create_command)
    listing = verbs.add_parser("list", help="the namespace's schedules")
    listing.set_defaults(func=list_command)
    for verb, text in (
        ("pause", "stop firing until unpaused"),
        ("unpause", "fire again"),
        ("delete", "delete it (runs it started keep running)"),
    ):
        parser = verbs.add_parser(verb, help=text)
        parser.add_argument("id")
        if verb in ("pause", "unpause"):
            parser.add_argument(
                "--note", type=note_text, default=f"{verb}d with ratchet schedules {verb}"
            )
        parser.set_defaults(func=act_command)
    _register_firings(verbs)
    for parser in [
        create,
        listing,
        *(verbs.choices[v] for v in ("pause", "unpause", "trigger", "backfill", "delete")),
    ]:
        add_connection_arguments(parser, queue_help="the task queue scheduled runs start on")


def _register_firings(verbs: argparse._SubParsersAction) -> None:
    trigger = verbs.add_parser("trigger", help="fire once now, and say what became of it")
    trigger.add_argument("id")
    trigger.add_argument(
        "--overlap",
        choices=OVERLAPS,
        type=overlap_name,
        help="while a firing still runs: skip this one, queue it (buffer_one), start it "
        "anyway (allow_all)... (default: the schedule's own policy)",
    )
    trigger.set_defaults(func=trigger_command)
    backfill = verbs.add_parser(
        "backfill", help="make the firings the schedule would have made in a past span"
    )
    backfill.add_argument("id")
    backfill.add_argument("--start", type=instant, required=True, help="ISO 8601 time (UTC)")
    backfill.add_argument("--end", type=instant, default=None, help="ISO 8601 (default: now)")
    backfill.add_argument(
        "--overlap",
        choices=OVERLAPS,
        type=overlap_name,
        default="buffer_all",
        help="how its firings overlap (default: buffer_all, one after another in order)",
    )
    backfill.set_defaults(func=backfill_command)


async def create_command(args: argparse.Namespace) -> int:
    from temporalio.client import ScheduleOverlapPolicy

    client = await connect(args)
    created = await client.schedule(
        args.id,
        args.prompt,
        agent=args.agent,
        session=args.session,
        cron=args.cron or (),
        every=args.every,
        overlap=ScheduleOverlapPolicy[args.overlap.upper()],
        catchup_window=args.catchup,
        jitter=args.jitter,
        paused=args.paused,
        note=args.note,
    )
    does = f"a run of {args.agent}" if args.agent else f"a message to session {args.session}"
    when = (await (await created.describe()).memo()).get("when")  # as `schedules list` says
    state = " (paused)" if args.paused else ""
    print(f'schedule {args.id}: {does}, {when}{state}; its runs: TemporalScheduledById="{args.id}"')
    return 0


async def list_command(args: argparse.Namespace) -> int:
    from temporalio.service import RPCError, RPCStatusCode

    client = await connect(args)
    rows = [["id", "does", "when", "state", "next"]]
    async for listed in await client.temporal.list_schedules():
        # The list is the server's visibility, a moment behind: describe each one, so
        # a schedule paused a moment ago shows as paused.
        try:
            described = await client.temporal.get_schedule_handle(listed.id).describe()
        except RPCError as e:
            if e.status != RPCStatusCode.NOT_FOUND:
                raise
            continue  # deleted meanwhile
        memo = await described.memo()
        rows.append(_row(listed.id, memo, described.schedule, described.info))
    print(table(rows) if len(rows) > 1 else "no schedules")
    return 0


async def act_command(args: argparse.Namespace) -> int:
    from temporalio.service import RPCError, RPCStatusCode

    client = await connect(args)
    handle = client.temporal.get_schedule_handle(args.id)
    try:
        if args.verb == "pause":
            await handle.pause(note=args.note)
        elif args.verb == "unpause":
            await handle.unpause(note=args.note)
        else:
            await handle.delete()
    except RPCError as e:
        if e.status != RPCStatusCode.NOT_FOUND:
            raise
        print(f"error: there is no schedule {args.id!r} (ratchet schedules list)", file=sys.stderr)
        return 1
    done = {
        "pause": "paused",
        "unpause": "unpaused",
        "delete": "deleted",
    }
    print(f"schedule {args.id} {done[args.verb]}")
    return 0


def _row(schedule_id: str, memo: Mapping[str, Any], schedule: Any, info: Any) -> list[str]:
    if memo.get("session"):
        does = f"message to {memo['session']}"
    else:
        does = f"run of {memo.get('agent', '?')}"
    spec, state = schedule.spec, schedule.state
    intervals = ", ".join(f"every {i.every}" for i in spec.intervals)
    # The server keeps a cron expression as a calendar spec: the memo has it as given.
    when = memo.get("when") or ", ".join(spec.cron_expressions) or intervals or "calendar"
    shown = f"paused: {state.note}" if state.paused else "active"
    upcoming = info.next_action_times[:1]
    next_at = f"{upcoming[0]:%Y-%m-%d %H:%M}Z" if upcoming and not state.paused else "-"
    return [schedule_id, does, when, shown, next_at]
