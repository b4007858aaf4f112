"""``ratchet schedules trigger`` and ``backfill``: firings asked for by hand, and
what became of a trigger (a schedule's overlap policy may skip or queue it)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from ._common import connect

SETTLE_SECONDS = 5.0
"""How long a trigger waits to see what the schedule made of it (it takes well under
a second: the schedule reads the trigger before it answers a describe)."""
SAME_SECOND = timedelta(seconds=2)
"""A firing this close to a trigger that started nothing took its name (the margin
allows for the server's clock and ours)."""
SHOWN = "%Y-%m-%d %H:%M:%S"


def instant(text: str) -> datetime:
    """An argparse type: an ISO 8601 time, UTC unless it says otherwise."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time: give an ISO 8601 one, e.g. 2026-01-31T07:00 (UTC)"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


async def trigger_command(args: argparse.Namespace) -> int:
    from temporalio.client import ScheduleOverlapPolicy

    client = await connect(args)
    handle = client.temporal.get_schedule_handle(args.id)
    before = await _described(handle, args.id)
    if before is None:
        return 1
    overlap = ScheduleOverlapPolicy[args.overlap.upper()] if args.overlap else None
    asked = datetime.now(UTC)
    await handle.trigger(overlap=overlap)
    after = await _settled(handle, before)
    chosen = args.overlap or before.schedule.policy.overlap.name.lower()
    said = await _outcome(client.temporal, args.id, before, after, chosen)
    print(said or _unseen(args.id, after, asked))
    return 0


async def backfill_command(args: argparse.Namespace) -> int:
    from temporalio.client import ScheduleBackfill, ScheduleOverlapPolicy

    start = args.start.astimezone(UTC)
    end = (args.end or datetime.now(UTC)).astimezone(UTC)
    if end <= start:
        print(
            f"error: --end ({end:{SHOWN}}Z) is not after --start ({start:{SHOWN}}Z)",
            file=sys.stderr,
        )
        return 1
    client = await connect(args)
    handle = client.temporal.get_schedule_handle(args.id)
    if await _described(handle, args.id) is None:
        return 1
    overlap = ScheduleOverlapPolicy[args.overlap.upper()]
    await handle.backfill(ScheduleBackfill(start_at=start, end_at=end, overlap=overlap))
    print(
        f"schedule {args.id} backfilled: the firings it would have made from "
        f"{start:{SHOWN}}Z to {end:{SHOWN}}Z start now "
        f'(overlap {args.overlap}); its runs: TemporalScheduledById="{args.id}"'
    )
    return 0


async def _described(handle: Any, schedule_id: str) -> Any:
    """The schedule's description, or ``None`` (said on stderr) if there is none."""
    from temporalio.service import RPCError, RPCStatusCode

    try:
        return await handle.describe()
    except RPCError as e:
        if e.status != RPCStatusCode.NOT_FOUND:
            raise
        print(
            f"error: there is no schedule {schedule_id!r} (ratchet schedules list)", file=sys.stderr
        )
        return None


def _counts(described: Any) -> tuple[int, int, int]:
    info = described.info
    buffered = described.raw_description.info.buffer_size
    return info.num_actions, info.num_actions_skipped_overlap, buffered


async def _settled(handle: Any, before: Any) -> Any:
    """The schedule's description once it has acted on the trigger (or given up waiting)."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        after = await handle.describe()
        if _counts(after) != _counts(before) or time.monotonic() > deadline:
            return after
        await asyncio.sleep(0.1)


async def _outcome(
    temporal: Any, schedule_id: str, before: Any, after: Any, overlap: str
) -> str | None:
    """What the schedule did with the trigger (``None``: nothing it shows)."""
    started, skipped, buffered = (
        a - b for a, b in zip(_counts(after), _counts(before), strict=True)
    )
    if started > 0:
        fired = after.info.recent_actions[-1].action.workflow_id
        return f"schedule {schedule_id} fired: started {fired} (overlap {overlap})"
    running = [a.workflow_id for a in after.info.running_actions]
    busy = f"{', '.join(running)} still runs" if running else "its last firing still runs"
    if buffered > 0:
        return (
            f"schedule {schedule_id} queued the firing: {busy} (overlap {overlap}); it "
            "starts when that ends"
        )
    if skipped > 0:
        lag = await _finished_unseen(temporal, running)
        return (
            f"schedule {schedule_id} skipped the firing: {busy}{lag} and its overlap policy "
            f"is {overlap}; to fire anyway: ratchet schedules trigger {schedule_id} "
            "--overlap allow_all (or buffer_one, to fire once it ends)"
        )
    return None


def _unseen(schedule_id: str, after: Any, asked: datetime) -> str:
    """What to say of a trigger the schedule shows no sign of."""
    recent = after.info.recent_actions
    newest = max(recent, key=lambda a: a.scheduled_at) if recent else None
    if newest is not None and abs(newest.scheduled_at - asked) < SAME_SECOND:
        # Temporal names a firing <schedule>-<the second it fires in>, and starts a
        # workflow id once: a second firing in that second starts nothing.
        return (
            f"schedule {schedule_id} started nothing: {newest.action.workflow_id} fired "
            "in the same second, and a firing is named by its second; trigger again"
        )
    return (
        f"schedule {schedule_id} was asked to fire, and has not acted on it yet "
        "(ratchet schedules list shows what it did)"
    )


async def _finished_unseen(temporal: Any, running: list[str]) -> str:
    """A note if a firing the schedule counts as running has in fact closed: the
    schedule hears of it a few seconds late."""
    from temporalio.client import WorkflowExecutionStatus

    for workflow_id in running:
        described = await temporal.get_workflow_handle(workflow_id).describe()
        if described.status != WorkflowExecutionStatus.RUNNING:
            return (
                " (as the schedule sees it: it has ended, and the schedule hears of "
                "that a few seconds late)"
            )
    return ""
