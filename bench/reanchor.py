"""What re-anchoring costs as a session ages: history and store bytes, and actions.

    .venv/bin/python -m bench.reanchor [--horizon 45]

A session's earlier messages are in its closed workflow runs' histories, which
Temporal deletes after the namespace's retention; a session re-anchors (copies its
log into its open run's history) before the oldest closed run it relies on is a
"horizon" old (default: half the retention). This script measures, on one dev
server, side by side, sessions whose logs are about 100 KB, 1 MB and 5 MB, each
without and with payload storage (``payload_storage=`` a temporary directory):

1. Bytes one re-anchor adds: the open run's history (the sum of its events'
   ``ByteSize()``) before and after the copy; with storage also the bytes the
   copy's claims name and the bytes newly written to the store's directory.
   Each session re-anchors twice: once with its log built (the first copy), and
   again after five more small messages and a continue-as-new (the copy of a
   session that had re-anchored before: it copies the whole log again).
2. Actions: the billable events of the re-anchor in the open run's history (the
   horizon's local-activity markers, the timer, one activity per chunk), the
   same in each continued run that relied on closed runs (a marker and a timer
   each, whether the timer fires or not), and the dev server's ``action`` metric
   (``bench.actions.Meter``) over the window in which only the timers fired and
   the copies ran (all sessions idle), which also counts recorded heartbeats.

The horizon is short (``build_worker(horizon=...)``, seconds) so the benchmark runs
in a few minutes; the worker's horizon still goes through the ``ratchet.horizon``
local activity as the default (half the namespace's retention) does. The monthly
figures at the default horizon of a 30-day retention are computed from these
counts by ``bench.report``, not measured.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client

from ratchet.agents import Agent, Result, RunContext, Thread
from ratchet.client import AgentClient
from ratchet.devserver import DevServer, free_port
from ratchet.payloads import FileStorageDriver
from ratchet.types import Message
from ratchet.wire import SessionOptions
from ratchet.wire._names import ANCHOR_ACTIVITY, HORIZON_ACTIVITY
from ratchet.worker import build_worker

from .actions import BILLABLE, Meter

RESULTS = Path(__file__).parent / "results" / "reanchor.json"
SIZES = {  # the log a session is built to: sends of replies of this many characters
    "100 KB": (10, 10_000),
    "1 MB": (10, 100_000),
    "5 MB": (25, 200_000),  # under storage's 256 KiB threshold: the replies stay in history
}
RUNS_BEFORE_CONTINUING = 5  # SessionOptions.continue_as_new_after_runs: every size a multiple
MORE_SENDS = RUNS_BEFORE_CONTINUING  # small sends before the second re-anchor
SMALL_REPLY = 100
TEXT = "All work and no play makes a long session. " * 5000  # 215,000 characters
SHA256 = re.compile(rb'"sha256"\s*:\s*"([0-9a-f]{64})"')
E = EventType


class Writer(Agent):
    """Answers "reply N" with N characters of text."""

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        size = int(messages[-1].text.split()[1])
        return Result(final_response=Message.assistant(TEXT[:size]))


def kind(event: HistoryEvent) -> str:
    """A billable event's kind; a local-activity marker by its activity."""
    if event.event_type == E.EVENT_TYPE_MARKER_RECORDED:
        raw = event.SerializeToString()
        return "horizon marker" if HORIZON_ACTIVITY.encode() in raw else "other marker"
    if event.event_type == E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
        name = event.activity_task_scheduled_event_attributes.activity_type.name
        return "anchor activity" if name == ANCHOR_ACTIVITY else f"activity {name}"
    return BILLABLE[event.event_type]


async def events(temporal: Client, workflow_id: str, run_id: str) -> list[HistoryEvent]:
    handle = temporal.get_workflow_handle(workflow_id, run_id=run_id)
    return [e async for e in handle.fetch_history_events()]  # not an action


def anchored(history: list[HistoryEvent]) -> bool:
    """The copy is done: every anchor activity scheduled completed, and the workflow
    task after the last one completed (it names the run as the thread's base)."""
    scheduled = [e for e in history if kind_of(e) == "anchor activity"]
    completed = [e for e in history if e.event_type == E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED]
    return (
        bool(scheduled)
        and len(completed) == len(scheduled)
        and history[-1].event_type == E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
        and history[-1].event_id > completed[-1].event_id
    )


def kind_of(event: HistoryEvent) -> str | None:
    return kind(event) if event.event_type in BILLABLE else None


def store_files(folder: Path) -> dict[str, int]:
    """A workflow's stored payloads, by SHA-256 name, and their bytes."""
    return {p.name: p.stat().st_size for p in folder.rglob("*") if p.is_file()}


class Case:
    """One session: a log size, with or without payload storage."""

    def __init__(self, size: str, client: AgentClient, store: FileStorageDriver | None) -> None:
        self.size, self.client, self.driver = size, client, store
        self.sends, self.reply = SIZES[size]
        self.name = f"{size}, {'payload storage' if store else 'no payload storage'}"
        self.rows: list[dict[str, Any]] = []
        self.continued_runs: list[Counter[str]] = []
        self.run_id, self.log_at_first = "", 0
        self.history_before = self.events_before = 0
        self.files_before: dict[str, int] = {}

    async def start(self) -> None:
        options = SessionOptions(continue_as_new_after_runs=RUNS_BEFORE_CONTINUING)
        self.session = await self.client.start_session("writer", options=options)
        # The store's directory of this session (FileStorageDriver: one per workflow).
        self.store = self.driver.workflow_dir(self.session.id) if self.driver else None

    async def build(self, sends: int, reply: int) -> None:
        for i in range(sends):
            await self.session.send(f"reply {reply} ({i})")

    async def idle_run(self) -> str:
        """The open run once it continued as new after the last send: idle, its timer
        started (no Update in it)."""
        temporal = self.client.temporal
        while True:
            run_id = (await temporal.get_workflow_handle(self.session.id).describe()).run_id
            history = await events(temporal, self.session.id, run_id)
            types = {e.event_type for e in history}
            if E.EVENT_TYPE_TIMER_STARTED in types and not types & {
                E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
                E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
            }:
                return run_id
            await asyncio.sleep(0.2)

    async def before(self) -> None:
        self.run_id = await self.idle_run()
        history = await events(self.client.temporal, self.session.id, self.run_id)
        self.history_before = sum(e.ByteSize() for e in history)
        self.events_before = len(history)
        self.files_before = store_files(self.store) if self.store else {}

    async def wait_anchored(self) -> None:
        """Follows the open run's history (the server's long poll) until the copy is done."""
        handle = self.client.temporal.get_workflow_handle(self.session.id, run_id=self.run_id)
        history: list[HistoryEvent] = []
        async for event in handle.fetch_history_events(wait_new_event=True):
            history.append(event)
            if anchored(history):
                return

    async def after(self, copy: int) -> None:
        history = await events(self.client.temporal, self.session.id, self.run_id)
        fired = next(e.event_id for e in history if e.event_type == E.EVENT_TYPE_TIMER_FIRED)
        at_fire = Counter(kind(e) for e in history if e.event_id > fired and kind_of(e))
        whole = Counter(kind(e) for e in history if kind_of(e))
        results = [
            e.activity_task_completed_event_attributes.result
            for e in history
            if e.event_type == E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
        ]
        described = await self.client.temporal.get_workflow_handle(
            self.session.id, run_id=self.run_id
        ).describe()
        row: dict[str, Any] = {
            "copy": copy,
            "chunks": len(results),
            "history_before": self.history_before,
            "history_after": sum(e.ByteSize() for e in history),
            "events_added": len(history) - self.events_before,
            "history_size_bytes_described": described.raw_description.workflow_execution_info.history_size_bytes,  # noqa: E501
            "chunk_results_in_history": sum(r.ByteSize() for r in results),
            "billable_in_open_run": dict(whole),
            "billable_after_timer_fired": dict(at_fire),
        }
        row["history_added"] = row["history_after"] - row["history_before"]
        latest = await self.client.temporal.get_workflow_handle(self.session.id).describe()
        row["continued_as_new_after_copy"] = latest.run_id != self.run_id
        if self.store:
            files = store_files(self.store)
            claimed = {d.decode() for r in results for d in SHA256.findall(r.SerializeToString())}
            new = {name: n for name, n in files.items() if name not in self.files_before}
            row["claims"] = len(claimed)
            row["store_bytes_claimed"] = sum(files[d] for d in claimed)
            row["store_claims_already_there"] = len(claimed - set(new))
            row["store_bytes_written"] = sum(new.values())
        self.rows.append(row)

    async def finish(self) -> dict[str, Any]:
        """The log's bytes (a query: outside the metered windows) and the markers and
        timers of each continued run that relied on closed runs and closed."""
        thread = await self.session.thread()
        temporal = self.client.temporal
        runs = [r async for r in temporal.list_workflows(f"WorkflowId = '{self.session.id}'")]
        for run in runs:
            if run.run_id == self.run_id:
                continue
            history = await events(temporal, self.session.id, run.run_id)
            types = {e.event_type for e in history}
            # Continued before its timer fired (a run that re-anchored is a copy's row).
            if E.EVENT_TYPE_TIMER_STARTED in types and E.EVENT_TYPE_TIMER_FIRED not in types:
                counts = Counter(
                    kind(e)
                    for e in history
                    if e.event_type in (E.EVENT_TYPE_MARKER_RECORDED, E.EVENT_TYPE_TIMER_STARTED)
                )
                self.continued_runs.append(counts)
        copies = 0  # every copy the session made, in all its runs
        for run in runs:
            history = await events(temporal, self.session.id, run.run_id)
            copies += any(kind_of(e) == "anchor activity" for e in history)
        return {
            "size": self.size,
            "copies_made": copies,
            "payload_storage": self.store is not None,
            "sends": self.sends + MORE_SENDS,
            "reply_chars": self.reply,
            "log_messages": len(thread.messages),
            "log_bytes": sum(len(m.model_dump_json()) for m in thread.messages),
            "log_bytes_at_first_copy": self.log_at_first,
            "workflow_runs": len(runs),
            "copies": self.rows,
            "per_continued_run_relying_on_closed_runs": [dict(c) for c in self.continued_runs],
        }


async def all_cases(cases: list[Case], step: str) -> None:
    await asyncio.gather(*(getattr(case, step)() for case in cases))


async def copy_round(cases: list[Case], meter: Meter, copy: int) -> dict[str, Any]:
    """Every session idle with its timer started; meter the timers firing and the
    copies (nothing else runs meanwhile); read each copy's bytes."""
    await all_cases(cases, "before")
    started = time.monotonic()
    before = await meter.settled()
    early = [
        case.name
        for case in cases
        if anchored(await events(case.client.temporal, case.session.id, case.run_id))
    ]
    await all_cases(cases, "wait_anchored")
    after = await meter.settled()
    await asyncio.gather(*(case.after(copy) for case in cases))
    metered = {k: after[k] - before[k] for k in after if after[k] != before[k]}
    return {
        "copy": copy,
        "sessions": len(cases),
        "metered": dict(sorted(metered.items())),
        "isolated": not early,  # no copy ran before the window opened
        "seconds": round(time.monotonic() - started, 1),
    }


async def measure(horizon: timedelta) -> dict[str, Any]:
    port = free_port()
    with (
        DevServer.start(ui=False, extra_args=["--metrics-port", str(port)]) as server,
        tempfile.TemporaryDirectory(prefix="reanchor-store-") as store_dir,
    ):
        meter = Meter(port)
        store = FileStorageDriver(store_dir)
        plain = await AgentClient.connect(server.address, task_queue="reanchor-plain")
        stored = await AgentClient.connect(
            server.address, task_queue="reanchor-stored", payload_storage=store
        )  # the client's payload storage is this driver: its directories are the sessions'
        agents = {"writer": Writer()}
        async with (
            build_worker(plain, agents, horizon=horizon),
            build_worker(stored, agents, horizon=horizon),
        ):
            cases = [
                Case(size, c, s) for size in SIZES for c, s in [(plain, None), (stored, store)]
            ]
            await all_cases(cases, "start")
            # The logs, built at once: the first timer (horizon after each session's
            # first continue-as-new) must not fire before the last session is built.
            built = time.monotonic()
            await asyncio.gather(*(c.build(c.sends, c.reply) for c in cases))
            build_seconds = time.monotonic() - built
            for case in cases:
                case.log_at_first = sum(
                    len(m.model_dump_json()) for m in (await case.session.thread()).messages
                )
            rounds = [await copy_round(cases, meter, 1)]
            # Older: five small messages and a continue-as-new; the open run now relies
            # on the run that holds the first copy, and copies the whole log again.
            await asyncio.gather(*(c.build(MORE_SENDS, SMALL_REPLY) for c in cases))
            rounds.append(await copy_round(cases, meter, 2))
            # Idle for one more horizon: a session that relies on no closed run now
            # sets no timer and copies nothing; one that continued as new after its
            # copy (its history past Temporal's suggestion) relies on that run again.
            before = await meter.settled()
            await asyncio.sleep(horizon.total_seconds() + 15)
            after = await meter.settled()
            idle = {k: after[k] - before[k] for k in after if after[k] != before[k]}
            sessions = [await case.finish() for case in cases]
    return {
        "horizon_seconds": horizon.total_seconds(),
        "continue_as_new_after_runs": RUNS_BEFORE_CONTINUING,
        "build_seconds": round(build_seconds, 1),
        "sessions": sessions,
        "metered_rounds": rounds,
        "metered_idle_horizon": dict(sorted(idle.items())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--horizon", type=float, default=45.0, help="seconds")
    args = parser.parse_args()
    started = time.monotonic()
    results = asyncio.run(measure(timedelta(seconds=args.horizon)))
    results["date"] = datetime.now(UTC).date().isoformat()
    results["seconds"] = round(time.monotonic() - started)
    results["command"] = f"python -m bench.reanchor --horizon {args.horizon:g}"
    for session in results["sessions"]:
        for row in session["copies"]:
            stored = (
                f", store written {row['store_bytes_written']:,} of {row['store_bytes_claimed']:,}"
                if session["payload_storage"]
                else ""
            )
            print(
                f"{session['size']:>6} storage={session['payload_storage']!s:5} copy {row['copy']}:"
                f" log {session['log_bytes']:,} B, history +{row['history_added']:,} B in "
                f"{row['chunks']} chunks{stored}; {row['billable_in_open_run']}"
            )
    for r in results["metered_rounds"]:
        print(f"metered, copy {r['copy']} ({r['sessions']} sessions): {r['metered']}")
    print(f"metered, one more horizon idle: {results['metered_idle_horizon']}")
    print(
        "copies made:",
        {s["size"] + str(s["payload_storage"]): s["copies_made"] for s in results["sessions"]},
    )
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
