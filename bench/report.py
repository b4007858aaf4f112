"""The measured figures in bench/README.md, generated from the committed results.

    .venv/bin/python -m bench.report            # rewrite the figures in bench/README.md
    .venv/bin/python -m bench.report --check    # rewrite nothing; exit 1 if they are stale

Each benchmark's section of bench/README.md holds its figures between
``<!-- --8<-- [start:NAME] -->`` and ``<!-- --8<-- [end:NAME] -->`` (the
section markers of pymdownx.snippets: docs/how-it-works.md includes the same
blocks), rendered from ``results/NAME.json`` by its one renderer here (``RENDERERS``). Only
the text between the markers is rewritten: everything else in the README is
hand-written prose. ``--check`` names the sections whose figures differ from what
the results give (and any results file no section renders); tests/test_bench_report.py
runs it, so a benchmark re-run and committed without this report fails the suite.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).parent
RESULTS = BENCH / "results"
README = BENCH / "README.md"
BLOCK = re.compile(r"(<!-- --8<-- \[start:([\w-]+)\] -->\n)(.*?)(<!-- --8<-- \[end:\2\] -->)", re.S)
TERMINATED = "terminated at 50 MB"  # the server's history limit; no other reason in this run

Renderer = Callable[[Path], str]
Data = dict[str, Any]


# Numbers


def count(n: float) -> str:
    """Whole numbers with thousands separators: 1,211."""
    return f"{round(n):,}"


def ratio(x: float) -> str:
    return f"{x:.2f}×"


def ms(x: float) -> str:
    return f"{x:,.1f} ms"


def seconds(x: float, digits: int = 1) -> str:
    return f"{x:,.{digits}f} s"


def size(n: float) -> str:
    """Bytes in decimal units, as the benchmarks' prose uses them: 257 B, 34.5 KB, 1.6 MB."""
    if n < 1000:
        return f"{round(n)} B"
    if n < 1_000_000:
        return f"{n / 1000:.1f} KB"
    return f"{n / 1_000_000:,.1f} MB"


def span(values: list[float]) -> str:
    """The range of a benchmark's rounds: 50.5–51.0."""
    return f"{min(values):,.1f}–{max(values):,.1f}"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def command(data: Data) -> str:
    """The command line the results came from, when the benchmark recorded it."""
    return f"Command: `{data['command'].strip()}`." if "command" in data else ""


def paragraphs(*parts: str) -> str:
    return "\n\n".join(part for part in parts if part)


def load(results: Path, name: str) -> Any:
    return json.loads((results / f"{name}.json").read_text())


# One renderer per results file


def render_history_growth(results: Path) -> str:
    rows = load(results, "history_growth")
    steps = sorted({row["steps"] for row in rows})
    engines = list(dict.fromkeys(row["engine"] for row in rows))
    by_key = {(row["engine"], row["steps"]): row for row in rows}

    def cell(row: Data | None) -> str:
        if row is None:
            return "–"
        if row["status"] == "TERMINATED":
            return TERMINATED
        runs = f" ({row['runs']} runs)" if row["runs"] > 1 else ""
        return ratio(row["ratio"]) + runs

    grid = table(
        ["history ÷ message bytes", *(f"N={n}" for n in steps)],
        [[engine, *(cell(by_key.get((engine, n))) for n in steps)] for engine in engines],
    )
    largest = steps[-1]
    bullets = []
    for engine in engines:
        row = by_key.get((engine, largest))
        if row is None:
            continue
        if row["status"] == "TERMINATED":
            how = f"{TERMINATED} (its history had reached {size(row['history_bytes'])})"
        else:
            how = f"{size(row['history_bytes'])} in {count(row['runs'])} workflow run" + (
                f"s (continued as new {count(row['runs'] - 1)} times)" if row["runs"] > 1 else ""
            )
        bullets.append(f"- {engine}: {how}, {count(row['events'])} events")
    return paragraphs(
        grid, f"At N={count(largest)}, history of all runs together:", "\n".join(bullets)
    )


def render_overhead(results: Path) -> str:
    data = load(results, "overhead")
    turn, turn_all = data["ms_per_turn_median"], data["ms_per_turn_all"]
    rate, rate_all = data["steps_per_second_median"], data["steps_per_second_all"]
    rounds = len(rate_all["ratchet"])

    def row(label: str, mine: str, bare: str, of: Data, all_of: Data, r: float) -> list[str]:
        return [
            label,
            f"{of[mine]:,.1f}",
            f"{of[bare]:,.1f}",
            ratio(r),
            span(all_of[mine]),
            span(all_of[bare]),
        ]

    per_turn = table(
        ["ms per turn", "Ratchet", "bare loop", "ratio", "Ratchet's rounds", "bare's rounds"],
        [
            row(
                "default (activities)",
                "ratchet",
                "bare",
                turn,
                turn_all,
                data["ratio_ratchet_to_bare_activity_loop"],
            ),
            row(
                "fast mode (local activities)",
                "ratchet_fast",
                "bare_local",
                turn,
                turn_all,
                data["ratio_fast_mode_to_bare_local_activity_loop"],
            ),
        ],
    )
    throughput = table(
        ["steps per second", "Ratchet", "bare loop", "ratio", "Ratchet's rounds", "bare's rounds"],
        [
            row("default", "ratchet", "bare", rate, rate_all, data["throughput_ratio_default"]),
            row(
                "fast mode",
                "ratchet_fast",
                "bare_local",
                rate,
                rate_all,
                data["throughput_ratio_fast"],
            ),
        ],
    )
    cpu, cpu_all = data["worker_cpu_ms_per_turn_median"], data["worker_cpu_ms_per_turn_all"]
    busy = data["concurrent_worker_cpu_ms_per_turn_median"]
    busy_all = data["concurrent_worker_cpu_ms_per_turn_all"]
    worker_cpu = table(
        [
            "worker CPU ms per turn",
            "Ratchet",
            "bare loop",
            "ratio",
            "Ratchet's rounds",
            "bare's rounds",
        ],
        [
            row("default, one run", "ratchet", "bare", cpu, cpu_all, data["cpu_ratio_default"]),
            row(
                "fast mode, one run",
                "ratchet_fast",
                "bare_local",
                cpu,
                cpu_all,
                data["cpu_ratio_fast"],
            ),
            row(
                f"default, {count(data['concurrent_runs'])} runs at once",
                "ratchet",
                "bare",
                busy,
                busy_all,
                data["concurrent_cpu_ratio_default"],
            ),
            row(
                f"fast mode, {count(data['concurrent_runs'])} runs at once",
                "ratchet_fast",
                "bare_local",
                busy,
                busy_all,
                data["concurrent_cpu_ratio_fast"],
            ),
        ],
    )
    return paragraphs(
        f"Per turn, N={count(data['steps'])}, medians of {count(data['rounds'])} rounds:",
        per_turn,
        *_by_sandbox(results),
        f"Throughput, {count(data['concurrent_runs'])} runs of {count(data['concurrent_steps'])}"
        f" steps at once on one worker, medians of {count(rounds)} rounds:",
        throughput,
        "The worker process's user + system CPU per turn (its own process: not the dev "
        "server's, not the client's), in the same rounds:",
        worker_cpu,
        command(data),
    )


def _by_sandbox(results: Path) -> list[str]:
    """The same ratios with other workflows in temporalio's sandbox (``--sandbox``),
    when those runs are committed."""
    modes = [
        ("Ratchet's outside, the bare loops' inside (as each ships; the tables below)", ""),
        ("all inside", "_sandbox_all"),
        ("all outside", "_sandbox_none"),
    ]
    rows = []
    for label, suffix in modes:
        if not (results / f"overhead{suffix}.json").exists():
            continue
        data = load(results, f"overhead{suffix}")
        rows.append(
            [
                label,
                ratio(data["cpu_ratio_default"]),
                ratio(data["concurrent_cpu_ratio_default"]),
                ratio(data["throughput_ratio_default"]),
                ratio(data["cpu_ratio_fast"]),
                ratio(data["ratio_fast_mode_to_bare_local_activity_loop"]),
            ]
        )
    if len(rows) < 2:
        return []
    heads = [
        "workflows in temporalio's sandbox",
        "worker CPU, one run",
        f"worker CPU, {count(data['concurrent_runs'])} runs",
        "throughput",
        "fast mode CPU",
        "fast mode ms per turn",
    ]
    return [
        "Ratchet ÷ bare loop by where the workflows run (each row its own run of the "
        "benchmark, the engines alternated within it):",
        table(heads, rows),
    ]


def render_start_latency(results: Path) -> str:
    data = load(results, "start_latency")
    return paragraphs(
        f"- `start_run` until the model is called: {ms(data['start_run_to_model_ms'])}\n"
        f"- `start_workflow` of a bare workflow until its activity runs: "
        f"{ms(data['bare_start_to_activity_ms'])}\n"
        f"- ratio: {ratio(data['ratio'])} (medians of {count(data['rounds'])})",
        command(data),
    )


def render_rerun(results: Path) -> str:
    data = load(results, "rerun")

    def met(value: float) -> str:
        return "met" if value >= data["target_ratio"] else "NOT met"

    def rounds(name: str) -> str:
        return ", ".join(seconds(x, 2) for x in data[f"{name}_s"])

    orders = " / ".join(" ".join(order) for order in data["order_in_round"])
    return paragraphs(
        f"- {count(data['cases'])} cases, {count(data['rounds'])} rounds (order: {orders})\n"
        f"- durable batch (`ratchet eval rerun`): {data['batch_cases_per_s']} cases/s "
        f"(rounds: {rounds('batch')})\n"
        f"- a dataset's snapshots as durable batches (`--dataset`): "
        f"{data['dataset_cases_per_s']} cases/s (rounds: {rounds('dataset')})\n"
        f"- `rerun_many` from the client: {data['rerun_cases_per_s']} cases/s "
        f"(rounds: {rounds('rerun')})\n"
        f"- the same cases as plain runs: {data['plain_cases_per_s']} cases/s "
        f"(rounds: {rounds('plain')})\n"
        f"- batch / plain throughput: {data['batch_ratio']:.2f}, dataset / plain: "
        f"{data['dataset_ratio']:.2f}, rerun_many / plain: {data['ratio']:.2f} (target >= "
        f"{data['target_ratio']:.2f}: "
        f"{met(min(data['batch_ratio'], data['dataset_ratio'], data['ratio']))})",
        command(data) + f" Commit {data['machine']['commit']}, {data['machine']['cpus']} CPUs.",
    )


def render_long_run(results: Path) -> str:
    data = load(results, "long_run")
    return "\n".join(
        [
            f"- {count(data['steps'])} steps, {count(data['turns'])} turns, "
            f"{data['status'].lower()}, {count(data['usage_requests'])} model requests",
            f"- {count(data['workflow_runs'])} workflow runs (continued as new "
            f"{count(data['continued_as_new'])} times), one execution id throughout "
            f"(`{data['execution_id_kept']}`)",
            f"- history: {size(data['history_bytes_total'])} in all; largest run "
            f"{size(data['history_bytes_largest_run'])}, "
            f"{count(data['events_largest_run'])} events",
            f"- {ms(data['ms_per_turn'])} per turn ({seconds(data['seconds'])} in all)",
            f"- thread at the end: {count(data['thread_messages_at_end'])} messages in its "
            f"log, {count(data['thread_view_at_end'])} of them in the view the model is sent",
        ]
    )


def session_figures(data: Data) -> str:
    """The figures of one sessions.py results file (sessions.json, sessions_1000.json)."""
    latency, concurrent, tiny = data["latency"], data["concurrent"], data["tiny"]
    bare_update = latency["bare_history_bytes_per_update"]
    grid = table(
        [
            "sends",
            "messages",
            "in order",
            "history ÷ message bytes",
            "workflow runs",
            "largest run input",
            "largest run events",
            "bytes per send besides messages",
            "÷ bare Update bytes",
            "events per send",
        ],
        [
            [
                count(row["sends"]),
                count(row["messages"]),
                "yes" if row["in_order"] else "**no**",
                ratio(row["history_per_message_byte"]),
                count(row["workflow_runs"]),
                size(row["largest_run_input_bytes"]),
                count(row["largest_run_events"]),
                count(row["fixed_bytes_per_send"]),
                ratio(row["fixed_bytes_per_send"] / bare_update),
                f"{row['events_per_send']:.2f}",
            ]
            for row in data["realistic"]
        ],
    )
    reads = table(
        ["sends", "messages", "whole thread", "page by page (500)", "latest 50", "the same"],
        [
            [
                count(row["sends"]),
                count(row["messages"]),
                seconds(row["read_seconds"], 2),
                seconds(row["read_by_pages_seconds"], 2),
                seconds(row["read_latest_50_seconds"], 3),
                "yes" if row["reads_agree"] else "**no**",
            ]
            for row in data["realistic"]
        ],
    )
    answered = (
        "all queued and answered once"
        if concurrent["all_queued_and_answered_once"]
        else "**not all queued and answered once**"
    )
    errors = ", ".join(concurrent["errors"]) or "none"
    bullets = [
        f"- {count(tiny['sends'])} one-word sends: {count(tiny['fixed_bytes_per_send'])} bytes "
        f"per send besides messages ({ratio(tiny['fixed_bytes_per_send'] / bare_update)} a bare "
        f"Update's bytes), {tiny['events_per_send']:.2f} events per send, "
        f"{count(tiny['workflow_runs'])} workflow runs, largest run input "
        f"{size(tiny['largest_run_input_bytes'])}, largest run {count(tiny['largest_run_events'])}"
        " events",
        f"- a bare workflow's Update running one activity: {count(bare_update)} history bytes",
        f"- {count(concurrent['sends'])} sends to one session at once: "
        f"{count(concurrent['answered'])} answered, {answered}; errors: {errors}; at most "
        f"{count(concurrent['peak_updates_in_flight_from_client'])} Updates in flight from the "
        f"client; {seconds(concurrent['seconds'])}",
        f"- `send` until the model is called: {ms(latency['session_send_to_model_ms'])} against "
        f"{ms(latency['bare_update_to_activity_ms'])} for a bare Update running one activity: "
        f"{ratio(latency['ratio'])} (medians of {count(latency['rounds'])})",
    ]
    return paragraphs(
        grid, "Reading the thread, by a client that has read none of it:", reads, "\n".join(bullets)
    )


def render_sessions(results: Path) -> str:
    data = load(results, "sessions")
    return paragraphs(session_figures(data), command(data))


def render_sessions_1000(results: Path) -> str:
    """The same figures, and the bytes per send against sessions.json's at the same sends."""
    data, other = load(results, "sessions_1000"), load(results, "sessions")
    other_by_sends = {row["sends"]: row for row in other["realistic"]}
    pairs = [
        (f"{count(row['sends'])} sends", row, other_by_sends[row["sends"]])
        for row in data["realistic"]
        if row["sends"] in other_by_sends
    ]
    pairs.append((f"{count(data['tiny']['sends'])} one-word sends", data["tiny"], other["tiny"]))
    changes = ", ".join(
        f"{label} {(mine['fixed_bytes_per_send'] / theirs['fixed_bytes_per_send'] - 1):+.1%}"
        for label, mine, theirs in pairs
    )
    return paragraphs(
        session_figures(data),
        f"Bytes per send besides messages against `sessions.json`: {changes}.",
        command(data),
    )


def render_session_memory(results: Path) -> str:
    data = load(results, "session_memory")
    kb, runs = data["kb_per_idle_workflow"], data["runs"]
    grid = table(
        ["idle cached workflow", "KB each", "runs"],
        [
            [
                "Ratchet session",
                f"{kb['ratchet_session']:.1f}",
                ", ".join(f"{x:.1f}" for x in runs["ratchet"]),
            ],
            [
                "bare workflow, one Update",
                f"{kb['bare']:.1f}",
                ", ".join(f"{x:.1f}" for x in runs["bare"]),
            ],
        ],
    )
    return paragraphs(
        grid,
        f"Ratio {ratio(data['ratio'])}, {count(data['count'])} workflows per worker process.",
        command(data),
    )


ACTION_TYPES = {
    "grpc_StartWorkflowExecution": "start",
    "command_ScheduleActivityTask": "activity",
    "command_BatchMarkers": "markers (local activities, patches)",
    "grpc_RecordActivityTaskHeartbeat": "heartbeat",
    "command_UpsertWorkflowSearchAttributes": "upsert",
    "message_UpdateWorkflowExecution_Acceptance": "update",
    "grpc_QueryWorkflow": "query",
    "grpc_SignalWorkflowExecution": "signal",
    "command_StartTimer": "timer",
    "command_ContinueAsNewWorkflowExecution": "continue-as-new",
}
TURNS_PER_RUN = 2  # the workload: a model call asking for a tool, the tool, the answer
REALISTIC_TURNS_PER_SEND = 4 / 3  # bench.sessions' realistic agent: a tool every third send


def action_total(row: Data) -> float:
    return sum(row.values())


def action_kinds(row: Data) -> str:
    return ", ".join(f"{ACTION_TYPES.get(k, k)} {v:g}" for k, v in row.items())


def render_actions(results: Path) -> str:
    data = load(results, "actions")
    engines, extras, check = data["engines"], data["extras"], data["history_check"]
    rows = [
        [
            name,
            f"{action_total(row):g}",
            f"{action_total(row) / TURNS_PER_RUN:g}",
            action_kinds(row),
        ]
        for name, row in engines.items()
    ]
    grid = table(["engine", "actions per message", "per turn", "of which"], rows)
    base = engines["ratchet run (defaults)"]
    added = [
        [name, f"+{action_total(row) - action_total(base):g}", action_kinds(row)]
        for name, row in extras.items()
    ]
    extra_grid = table(["on a Ratchet run", "adds", "the run's actions then"], added)
    checks = "; ".join(f"{name}: {n}" for name, n in check.items())
    return paragraphs(
        grid,
        extra_grid,
        f"Billable events in one run's history (heartbeats and queries leave none; a "
        f"workflow task's local-activity markers are billed as one): {checks}.",
        f"{data['runs']} runs each, {data['date']}: "
        f"`python -m bench.actions --runs {data['runs']}`",
    )


def latency_cases(results: Path) -> list[Data]:
    """The cases of ``actions_by_latency`` (and of its 30 s run, when committed)."""
    cases = list(load(results, "actions_by_latency")["cases"])
    if (results / "actions_by_latency_30s.json").exists():
        cases += load(results, "actions_by_latency_30s")["cases"]
    return cases


HEARTBEAT = "grpc_RecordActivityTaskHeartbeat"
ACTIVITY = "command_ScheduleActivityTask"


def billed(case: Data, name: str) -> float:
    """Actions per run as Temporal Cloud bills them: metered, less the upserts of
    ``TemporalChangeVersion`` (exempt)."""
    return action_total(case["engines"][name]) - case.get("change_version_upserts", {}).get(name, 0)


def message_overhead(case: Data) -> str:
    """What a session message costs beyond its turns' activities and heartbeats."""
    name = "ratchet session message (defaults)"
    row = case["engines"][name]
    turns = row.get(ACTIVITY, 0) + row.get(HEARTBEAT, 0)
    rest = {k: v for k, v in row.items() if k not in (ACTIVITY, HEARTBEAT)}
    return f"{billed(case, name) - turns:g} ({action_kinds(rest)})"


def render_actions_by_latency(results: Path) -> str:
    data = load(results, "actions_by_latency")
    rows, overheads = [], []
    for case in latency_cases(results):
        turns = case["turns"]
        for name, row in case["engines"].items():
            beats = row.get(HEARTBEAT, 0)
            per_turn = f"{action_total(row) / turns:.2f}"
            cloud = f"{billed(case, name) / turns:.2f}"
            rows.append(
                [seconds(case["model_seconds"]), count(turns), name, per_turn, cloud, f"{beats:g}"]
            )
        if "ratchet session message (defaults)" in case["engines"]:
            overheads.append([seconds(case["model_seconds"]), count(turns), message_overhead(case)])
    header = ["model call", "turns", "engine", "actions per turn (metered)"]
    grid = table([*header, "per turn, as Cloud bills", "heartbeats per run"], rows)
    beyond = ""
    if overheads:
        beyond = "A session message's actions beyond its turns (activities and heartbeats):\n\n"
        beyond += table(["model call", "turns", "beyond its turns"], overheads)
    runs = (
        f'{data["runs"]} runs per engine and case (ABBA blocks), {data["date"]}. "As Cloud '
        'bills": the metered count less the upserts of `TemporalChangeVersion` that '
        "`workflow.patched` makes (Temporal Cloud bills no action for them)."
    )
    extra = ""
    if (results / "actions_by_latency_30s.json").exists():
        ran = load(results, "actions_by_latency_30s")["command"].strip()
        out = " --out bench/results/actions_by_latency_30s.json"
        extra = f"Command: `{ran}{'' if '--out' in ran else out}`."
    return paragraphs(grid, beyond, followers_and_idle(data), runs, command(data), extra)


PRICE_PER_MILLION = 50.0
"""Temporal Cloud's pay-as-you-go price per million actions, from $50 (the Developer
plan's at every volume; docs.temporal.io/cloud/pricing, read 2026-11-29)."""


def render_bill(results: Path) -> str:
    """A million turns at Temporal Cloud's price, per model latency, from the longest
    run of each latency in ``actions_by_latency``."""
    longest: dict[float, Data] = {}
    for case in latency_cases(results):
        held = longest.get(case["model_seconds"])
        if held is None or case["turns"] > held["turns"]:
            longest[case["model_seconds"]] = case
    rows = []
    for latency, case in sorted(longest.items()):
        for name in case["engines"]:
            if "session message" in name:
                continue
            per_turn = billed(case, name) / case["turns"]
            dollars = per_turn * PRICE_PER_MILLION
            rows.append(
                [
                    seconds(latency),
                    count(case["turns"]),
                    name,
                    f"{per_turn:.2f}",
                    f"{per_turn:.2f} million",
                    f"${dollars:,.0f}",
                ]
            )
    header = ["model call", "turns per run", "engine", "actions per turn (as Cloud bills)"]
    grid = table([*header, "for 1 million turns", f"at ${PRICE_PER_MILLION:g} per million"], rows)
    return paragraphs(
        grid,
        "Computed from `results/actions_by_latency.json` (the longest run measured at each "
        "latency), not measured: the price is Temporal Cloud's pay-as-you-go price per "
        "million actions (docs.temporal.io/cloud/pricing, read 2026-11-29), without the "
        "plan fee, storage, or volume discounts.",
    )


def followers_and_idle(data: Data) -> str:
    """A live follower's queries per minute; an idle session's re-anchoring."""
    parts = []
    if "followers" in data:
        f = data["followers"]
        parts.append(
            f"A live follower (`events()`): {f['queries_per_minute_running']:g} queries a minute "
            f"while it follows a run of {seconds(f['model_seconds'], 0)} model calls "
            f"({f['run_seconds']:g} s), {f['queries_per_minute_idle']:g} a minute while it "
            f"follows an idle session ({f['idle_seconds']:g} s)."
        )
    if "idle_session" in data:
        i = data["idle_session"]
        parts.append(
            f"An idle session that relies on a closed workflow run, with a horizon of "
            f"{i['horizon_seconds']:g} s: {action_total(i['while_the_timer_fires']):g} actions "
            f"in the {i['window_seconds']:g} s in which its re-anchoring timer fires "
            f"({action_kinds(i['while_the_timer_fires'])}), then "
            f"{action_total(i['after']):g} in the next {i['window_seconds']:g} s."
        )
    return paragraphs(*parts)


RETENTION_DAYS = 30  # a common namespace retention; the default horizon is half of it
HORIZON_DAYS = RETENTION_DAYS / 2
MONTH_DAYS = 30


def copy_actions(row: Data, heartbeats_per_chunk: float) -> float:
    """The actions of one re-anchor by its timer: the open run's timer and horizon
    markers, one activity per chunk and its recorded heartbeats (not the start of the
    run, which is its continue-as-new's)."""
    billable = row["billable_in_open_run"]
    chunks = billable.get("anchor activity", 0)
    return (
        billable.get("timer", 0)
        + billable.get("horizon marker", 0)
        + chunks * (1 + heartbeats_per_chunk)
    )


def share(x: float) -> str:
    """A ratio that may be far below one: 1.02×, 0.002×."""
    return ratio(x) if x >= 0.1 else f"{x:.3f}×"


def render_reanchor(results: Path) -> str:
    data = load(results, "reanchor")
    sessions, rounds = data["sessions"], data["metered_rounds"]
    metered = [r["metered"] for r in rounds]
    scheduled = sum(m.get("command_ScheduleActivityTask", 0) for m in metered)
    beats = sum(m.get("grpc_RecordActivityTaskHeartbeat", 0) for m in metered)
    per_chunk = beats / scheduled if scheduled else 0.0

    def storage(session: Data) -> str:
        return "yes" if session["payload_storage"] else "no"

    def stored(session: Data, row: Data) -> list[str]:
        if not session["payload_storage"]:
            return ["–", "–", "–"]
        return [
            count(row["claims"]),
            size(row["store_bytes_claimed"]),
            size(row["store_bytes_written"]),
        ]

    def log_at(session: Data, row: Data) -> int:
        return session["log_bytes_at_first_copy"] if row["copy"] == 1 else session["log_bytes"]

    bytes_grid = table(
        ["log", "payload storage", "copy", "chunks", "history added", "÷ log",
         "claims in history", "store: bytes the claims name", "store: bytes newly written",
         "continued as new after it"],
        [
            [
                size(log_at(session, row)),
                storage(session),
                count(row["copy"]),
                count(row["chunks"]),
                size(row["history_added"]),
                share(row["history_added"] / log_at(session, row)),
                *stored(session, row),
                "**yes**" if row["continued_as_new_after_copy"] else "no",
            ]
            for session in sessions
            for row in session["copies"]
        ],
    )  # fmt: skip

    def kinds(row: Data) -> str:
        billable = dict(row["billable_in_open_run"])
        billable.pop("workflow started", None)  # the continue-as-new's, not the copy's
        return ", ".join(f"{k} {v}" for k, v in sorted(billable.items()))

    continued = [c for s in sessions for c in s["per_continued_run_relying_on_closed_runs"]]
    per_continue = {k: max(c.get(k, 0) for c in continued) for k in ("horizon marker", "timer")}
    continue_actions = sum(per_continue.values())
    plain = [s for s in sessions if not s["payload_storage"]]
    actions_grid = table(
        ["log", "billable events in the open run (history, measured)",
         "actions of one re-anchor (with metered heartbeats)"],
        [
            [size(s["log_bytes"]), kinds(s["copies"][-1]),
             f"{copy_actions(s['copies'][-1], per_chunk):g}"]
            for s in plain
        ],
    )  # fmt: skip
    idle_metered = action_kinds(data["metered_idle_horizon"]) or "nothing"
    metered_lines = "\n".join(
        [
            f"- copy {r['copy']}, {count(r['sessions'])} sessions at once: "
            f"{action_kinds(r['metered'])}"
            + ("" if r["isolated"] else " (**not isolated**: a copy ran before the window)")
            for r in rounds
        ]
        + [f"- one more horizon, every session idle: {idle_metered}"]
    )
    made = "; ".join(
        f"{size(s['log_bytes'])} {'with' if s['payload_storage'] else 'without'} storage "
        f"{count(s['copies_made'])}"
        for s in sessions
    )
    per_month = MONTH_DAYS / HORIZON_DAYS

    def monthly(session: Data) -> list[str]:
        row = session["copies"][-1]
        once = copy_actions(row, per_chunk)
        looping = row["continued_as_new_after_copy"]
        # A session that continues as new after its copy relies on a closed run again:
        # it copies once more each horizon, idle or not, with a continue-as-new each time.
        later = per_month * (once + 1) if looping else 0.0
        chunks = row["billable_in_open_run"].get("anchor activity", 0)
        at_fire = 1 + chunks * (1 + per_chunk)  # the marker when the timer fires, the copy
        busy = f"{continue_actions:g} per continue-as-new + at most {per_month * at_fire:g}"
        rewritten = size(per_month * row["history_added"])
        if session["payload_storage"]:
            rewritten += f" + store {size(per_month * row['store_bytes_claimed'])}"
        return [
            size(session["log_bytes"]),
            storage(session),
            f"{once:g}",
            f"{later:g}",
            busy,
            rewritten,
        ]

    month_grid = table(
        ["log", "payload storage", "idle: the month of its last continue-as-new",
         "idle: each later month", "busy: per month",
         "busy: bytes copied per month, at most (history + the store's chunks)"],
        [monthly(s) for s in sessions],
    )  # fmt: skip
    return paragraphs(
        f"Measured, horizon {seconds(data['horizon_seconds'], 0)} (`build_worker(horizon=)`, "
        f"read by the `ratchet.horizon` local activity as the default is), sessions "
        f"continuing as new every {count(data['continue_as_new_after_runs'])} messages; "
        "bytes one re-anchor writes (copy 2: the same session after five more small "
        "messages and a continue-as-new, copying its whole log again):",
        bytes_grid,
        "Billable events of one re-anchor by its timer, from the open run's history (its "
        "start is the continue-as-new's, left out); recorded heartbeats from the dev "
        f"server's metering: {beats:g} for {scheduled:g} anchor activities. Each "
        f"continued run that relied on closed runs and continued again before its timer "
        f"fired ({count(len(continued))} of them): "
        + ", ".join(f"{k} {v}" for k, v in per_continue.items())
        + ".",
        actions_grid,
        "Metered (`action` by type) while only the timers fired and the copies ran:",
        metered_lines,
        f"Copies each session made in all, by its log: {made}.",
        f"Computed, not measured: per month at the default horizon of a {RETENTION_DAYS}-day "
        f"retention ({HORIZON_DAYS:g} days), from the counts above. An idle session copies "
        "once after its last continue-as-new, then relies on no closed run (no timer); a "
        "busy one pays a marker and a timer per continue-as-new and copies at most once a "
        "horizon per chain (the marker when its timer fires, the chunks and their "
        "heartbeats); a session marked as continuing after its copy copies every horizon, "
        "idle or not.",
        month_grid,
        f"{data['date']}, {seconds(data['seconds'], 0)}. " + command(data),
    )


def render_capacity(results: Path) -> str:
    memory = load(results, "session_memory")
    overhead = load(results, "overhead")
    sessions = load(results, "sessions")
    actions = load(results, "actions")["engines"]
    kb = memory["kb_per_idle_workflow"]["ratchet_session"]
    cpu = overhead["concurrent_worker_cpu_ms_per_turn_median"]
    long_session = sessions["realistic"][-1]
    bytes_per_send = long_session["history_bytes"] / long_session["sends"]
    run_actions = action_total(actions["ratchet run (defaults)"])
    send_actions = action_total(actions["ratchet session message (defaults)"])
    per_second = 1_000_000 / 86_400
    grid = table(
        ["figure", "Ratchet (defaults)", "fast mode", "from"],
        [
            ["memory per cached idle session", f"{kb:.0f} KB", "", "`session_memory`"],
            [
                "sessions cached per worker (temporalio's `max_cached_workflows`, 1,000)",
                f"{kb * 1000 / 1000:.0f} MB for 1,000",
                "",
                "`session_memory`",
            ],
            [
                "worker CPU per turn (50 runs at once)",
                f"{cpu['ratchet']:.2f} ms",
                f"{cpu['ratchet_fast']:.2f} ms",
                "`overhead`",
            ],
            [
                "turns per second per worker core (1 ÷ CPU per turn)",
                count(1000 / cpu["ratchet"]),
                count(1000 / cpu["ratchet_fast"]),
                "`overhead`",
            ],
            [
                "history per message (long session, a tool every third)",
                size(bytes_per_send),
                "",
                "`sessions`",
            ],
            [
                "actions per message: a run / a session message",
                f"{run_actions:g} / {send_actions:g}",
                f"{action_total(actions['ratchet run (fast mode)']):g} / —",
                "`actions`",
            ],
        ],
    )
    million = table(
        ["1 million turns a day (extrapolated)", "needs"],
        [
            ["turns per second, on average", f"{per_second:.1f}"],
            [
                "worker cores busy with Ratchet's own work, on average",
                f"{per_second * cpu['ratchet'] / 1000:.2f}",
            ],
            [
                "the same at a peak of ten times the average",
                f"{10 * per_second * cpu['ratchet'] / 1000:.2f}",
            ],
            [
                "Temporal actions a day (runs of two turns, defaults)",
                count(1_000_000 / TURNS_PER_RUN * run_actions),
            ],
            [
                "history written a day (session messages of this length)",
                size(1_000_000 / REALISTIC_TURNS_PER_SEND * bytes_per_send),
            ],
        ],
    )
    return paragraphs(grid, million)


def render_state_cost(results: Path) -> str:
    data = load(results, "state_cost")
    us, per_turn = data["serializer_us"], data["history_bytes_per_turn"]
    none = per_turn["none"]
    serializers = (
        f"- storing and reading back a {count(data['typical_state_json_bytes'])}-byte value "
        f"(as JSON): `JSONSerializer` {us['json']:,.1f} µs, `PickleSerializer` "
        f"{us['pickle']:,.1f} µs ({ratio(us['pickle'] / us['json'])})"
    )
    grid = table(
        [f"state ({count(data['turns'])} turns)", "history bytes per turn", "more than no state"],
        [
            [kind, count(value), "–" if kind == "none" else f"+{count(value - none)}"]
            for kind, value in per_turn.items()
        ],
    )
    return paragraphs(serializers, grid)


def render_events(results: Path) -> str:
    data = load(results, "events")
    cases = {key: value for key, value in data.items() if isinstance(value, dict)}

    def delay(case: Data, key: str) -> str:
        return ms(case[key]) if key in case else "–"

    grid = table(
        [
            "run",
            "live events",
            "history events",
            "history bytes",
            "delay, median",
            "delay, p95",
            "received",
        ],
        [
            [
                *key.split(" · ", 1),
                count(case["history_events"]),
                count(case["history_bytes"]),
                delay(case, "delay_ms_median"),
                delay(case, "delay_ms_p95"),
                case.get("received", "–"),
            ]
            for key, case in cases.items()
        ],
    )
    off, on = cases["ticker · off"], cases["ticker · on, 250 ms batches, unwatched"]
    return paragraphs(
        f"`ticker` emits {count(data['emits_per_turn'])} events in its turn; `tools` is the "
        f"3-turn tool-calling run. Medians of {count(data['rounds'])} rounds.",
        grid,
        f"Live events on (250 ms batches, unwatched) against off, `ticker`: "
        f"+{count(on['history_events'] - off['history_events'])} history events, "
        f"+{count(on['history_bytes'] - off['history_bytes'])} bytes.",
    )


def render_followers(results: Path) -> str:
    """followers.json against followers_before.json (the reader before issue 28)."""
    runs = {"before": load(results, "followers_before"), "after": load(results, "followers")}

    def row(name: str, data: Data) -> list[str]:
        delay, behind = data["run_finished_delay_ms"], data["behind"]
        return [
            name,
            f"{delay['received']}",
            ms(delay["median"]),
            ms(delay["p95"]),
            ms(delay["max"]),
            (data["follower_error"] or "none").split(",")[0],
            f"{count(behind['got'])} of {count(behind['asked'])} ({behind['outcome']})",
        ]

    after = runs["after"]
    grid = table(
        [
            "reader",
            "run ends seen",
            "delay, median",
            "p95",
            "worst",
            "live follower failed",
            f"{count(after['behind']['asked'])} behind: events got",
        ],
        [row(name, data) for name, data in runs.items()],
    )
    return paragraphs(
        f"{count(after['messages'])} messages, each {count(after['emits_per_message'])} events, "
        "a continue-as-new after each.",
        grid,
    )


def render_resume(results: Path) -> str:
    data = load(results, "resume")
    scenarios = {
        "turn_worker": "the killed worker held only the turn",
        "workflow_and_turn_worker": "it held the turn and the run's workflow",
    }
    grid = table(
        ["kill → retried tool starts", "kills", "median", "max", "min"],
        [
            [
                label,
                count(len(data[key]["samples_s"])),
                seconds(data[key]["median_s"], 2),
                seconds(data[key]["max_s"], 2),
                seconds(data[key]["min_s"], 2),
            ]
            for key, label in scenarios.items()
        ],
    )
    beats = data["heartbeats"]
    return paragraphs(
        f"Heartbeat timeout {seconds(data['heartbeat_timeout_s'])}, first retry after "
        f"{seconds(data['initial_retry_interval_s'])}.",
        grid,
        f"Heartbeat requests at the server: {count(beats['heartbeat_requests'])} in "
        f"{seconds(beats['running_turn_seconds'])} of running turn, "
        f"{beats['per_running_turn_per_minute']:.1f} a minute.",
        command(data),
    )


def render_kill_points(results: Path) -> str:
    rows, commands = [], []
    for name in ("kill_points_6s", "kill_points_30s"):
        if not (results / f"{name}.json").exists():
            continue
        data = load(results, name)
        commands.append(command(data))
        for label, case in data["cases"].items():
            rows.append(
                [
                    label,
                    count(len(case["samples_s"])),
                    seconds(case["median_s"], 2),
                    seconds(case["p95_s"], 2),
                    seconds(case["max_s"], 2),
                ]
            )
    grid = table(["SIGKILL at a random point of", "kills", "median", "p95", "max"], rows)
    return paragraphs(
        "Kill → the model call starts again on another worker; default options "
        "(heartbeat timeout 10 s, first retry after 1 s).",
        grid,
        *commands,
    )


def render_send_chaos(results: Path) -> str:
    data = load(results, "send_chaos")
    grid = table(
        ["seed", "sends", "kills", "retried sends", "run twice", "lost", "seconds"],
        [
            [
                str(r["seed"]),
                count(r["sends"]),
                count(r["kills"]),
                count(r["retries"]),
                count(len(r["run_twice"])),
                count(len(r["lost"])),
                seconds(r["seconds"]),
            ]
            for r in data["rounds"]
        ],
    )
    return paragraphs(
        grid,
        f"In all: {count(data['sends'])} sends, {count(data['kills'])} kills, "
        f"{count(data['run_twice'])} messages run twice, {count(data['lost'])} lost.",
        command(data),
    )


def render_checkpoints(results: Path) -> str:
    data = load(results, "checkpoints")
    grid = table(
        [
            "model call",
            "kill after",
            "watcher",
            "runs",
            "kills",
            "turns retried",
            "turn 1 model calls",
            "repeated model calls",
            "text deltas watched",
            "repeated text deltas",
        ],
        [
            [
                seconds(case["model_latency_s"], 2),
                seconds(case["kill_after_s"]),
                "yes" if case["watched"] else "no",
                count(case["runs"]),
                count(case["kills"]),
                count(case["turns_retried"]),
                count(case["turn_1_model_calls"]),
                count(case["repeated_model_calls"]),
                count(case["text_deltas"]) if case["watched"] else "–",
                count(case["repeated_text_deltas"]) if case["watched"] else "–",
            ]
            for case in data["cases"]
        ],
    )
    return paragraphs(
        grid,
        f"In all: {count(data['kills'])} kills, {count(data['repeated_model_calls'])} "
        f"repeated model calls, {count(data['repeated_text_deltas'])} repeated text deltas.",
        command(data),
    )


def render_overload(results: Path) -> str:
    data = load(results, "overload")
    failures = ", ".join(str(f) for f in data["failures"]) or "none"
    return paragraphs(
        "\n".join(
            [
                f"- {count(data['runs'])} runs, {count(data['completed'])} completed, "
                f"failures: {failures}; {seconds(data['seconds'])}",
                f"- {count(data['burners'])} busy-loop processes on {count(data['cpus'])} CPUs, "
                f"workers' threads at nice {data['worker_nice']}: load average "
                f"{data['load_average_at_start']:.1f} at the start, median "
                f"{data['load_average_median']:.1f}, max {data['load_average_max']:.1f}",
                f"- first turns retried: {count(data['turns_retried'])}",
                f"- tool starts: {count(data['tool_starts'])}; after their turn had closed: "
                f"{count(data['late_tool_starts'])}; with another attempt's idempotency key: "
                f"{count(data['foreign_keys'])}",
                f"- attempts stopped because the server no longer knew them: "
                f"{count(data['stale_stops'])} ({count(data['model_calls_cancelled'])} model "
                "calls cancelled)",
            ]
        ),
        command(data),
    )


def delays(row: Data) -> str:
    """Token delays' percentiles (web.json)."""
    if not row["count"]:
        return "none received"
    return f"{ms(row['p50_ms'])} / {ms(row['p95_ms'])} / {ms(row['p99_ms'])}"


def web_first_event(first: Data) -> str:
    def row(label: str, of: Data) -> list[str]:
        low, high = of["ratio_ci95"]
        return [
            label,
            ms(of["python_ms_median"]),
            ms(of["sse_ms_median"]),
            ratio(of["ratio_of_medians"]),
            f"{low:.2f}–{high:.2f}",
            " / ".join(f"{q:.2f}" for q in of["round_ratio_quartiles"]),
        ]

    return paragraphs(
        f"First event after a send, medians of {count(first['rounds'])} rounds (ABBA); the "
        "interval is a bootstrap of the ratio of medians, then the quartiles of the rounds' "
        "own ratios:",
        table(
            ["send → first", "Python client", "SSE", "ratio", "95% interval", "rounds' ratios"],
            [row("event", first["first_event"]), row("text", first["first_text"])],
        ),
    )


def web_load(levels: list[Data]) -> str:
    def cells(of: Callable[[Data], str]) -> list[str]:
        return [of(level) for level in levels]

    def span_of(low_high: list[int]) -> str:
        low, high = low_high
        return count(low) if low == high else f"{count(low)}–{count(high)}"

    def usage(row: Data) -> str:
        return (
            f"{row['web_cpu']:.2f} / {row['workers_cpu']:.2f} / {row['temporal_cpu']:.2f} / "
            f"{row['bench_cpu']:.2f}; {count(row['queries'])} q/s"
        )

    rows = [
        [
            "watchers connected before the first send",
            *cells(lambda x: f"{count(x['watchers_connected'])} in {seconds(x['connect_s'])}"),
        ],
        ["token delay p50 / p95 / p99", *cells(lambda x: delays(x["token_delay"]))],
        ["a reply's first token", *cells(lambda x: delays(x["first_token_delay"]))],
        [
            "tokens received / emitted",
            *cells(lambda x: f"{count(x['tokens_received'])} / {count(x['tokens_emitted'])}"),
        ],
        [
            "replies with every token",
            *cells(
                lambda x: (
                    f"{count(x['replies_watched'] - x['replies_incomplete'])} of "
                    f"{count(x['replies_watched'])}"
                )
            ),
        ],
        [
            "sends; errors; late by over 1 s",
            *cells(
                lambda x: (
                    f"{count(x['sends_in_steady_state'])}; {count(x['send_error_count'])};"
                    f" {count(x['late_sends'])}"
                )
            ),
        ],
        [
            "reply p50 / p95",
            *cells(
                lambda x: f"{seconds(x['reply_s']['p50'], 2)} / {seconds(x['reply_s']['p95'], 2)}"
            ),
        ],
        [
            "watcher errors; web server exceptions",
            *cells(lambda x: f"{count(x['watcher_errors'])}; {count(x['web_server_exceptions'])}"),
        ],
        [
            "`GET /v1/server` subscriptions; watchers",
            *cells(lambda x: f"{span_of(x['subscriptions'])}; {span_of(x['watchers'])}"),
        ],
        [
            "web server RSS start / peak / end",
            *cells(
                lambda x: (
                    f"{x['rss_mb']['start']:,.0f} / {x['rss_mb']['peak']:,.0f} / "
                    f"{x['rss_mb']['end']:,.0f} MB"
                )
            ),
        ],
        ["CPU idle: web / workers / Temporal / bench", *cells(lambda x: usage(x["idle"]))],
        ["CPU in steady state", *cells(lambda x: usage(x["steady"]))],
    ]
    first = levels[0]
    workers = "one worker process" if first["workers"] == 1 else f"{first['workers']} workers"
    return paragraphs(
        f"Load: a web server, {workers}; each session sends a message every "
        f"{seconds(first['period_s'], 0)} and has one SSE watcher; "
        f"{seconds(first['steady_s'], 0)} of steady state. Delays from emit to the watcher; "
        "CPU in cores (idle: every watcher connected, no message sent, "
        f"{seconds(first['idle_s'], 0)}) and the server's workflow queries a second:",
        table(["", *(f"{count(x['sessions'])} sessions" for x in levels)], rows),
    )


def web_fan_out(fan: Data) -> str:
    [during] = fan["server_during_reply"][:1]
    missed = ", ".join(f"{kind} {count(n)}" for kind, n in fan["events_missed_by_kind"].items())
    return paragraphs(
        f"Fan-out: {count(fan['watchers'])} watchers of one session, "
        f"{count(fan['replies'])} replies:",
        "\n".join(
            [
                f"- `GET /v1/server` during a reply: subscriptions "
                f"{count(during['subscriptions'])}, watchers {count(during['watchers'])}",
                f"- watchers with every event: {count(fan['watchers_with_every_event'])} of "
                f"{count(fan['watchers'])} ({count(fan['events_per_watcher'])} events each); "
                f"events missed: {count(fan['events_missed'])}"
                + (f" ({missed})" if missed else ""),
                f"- tokens received {count(fan['tokens_received'])} of "
                f"{count(fan['tokens_expected'])}; delivery delay p50 / p95 / p99: "
                f"{delays(fan['delivery_delay'])}",
            ]
        ),
    )


def web_kill(kill: Data) -> str:
    return paragraphs(
        f"Kill and reconnect: {count(kill['kills'])} replies of "
        f"{count(kill['events_per_reply'])} events; lost {count(kill['lost'])}, repeated "
        f"{count(kill['duplicated'])}, not in the stream {count(kill['foreign'])}:",
        table(
            ["killed after", "ids before", "ids resumed", "in the stream", "lost", "repeated",
             "kill → next event"],
            [
                [
                    f"{count(row['killed_after_events'])} events",
                    count(row["seen_before_kill"]),
                    count(row["resumed"]),
                    count(row["expected"]),
                    count(row["lost"]),
                    count(row["duplicated"]),
                    seconds(row["kill_to_resumed_event_s"], 2),
                ]
                for row in kill["rows"]
            ],
        ),
    )  # fmt: skip


def web_history(hist: Data) -> str:
    def joined(values: list[int]) -> str:
        return ", ".join(count(v) for v in values) or "–"

    def row(label: str, of: Data) -> list[str]:
        return [
            label,
            f"{of['history_events_per_reply']:,.0f}",
            size(of["history_bytes_per_reply"]),
            f"{of['history_bytes_per_token']:,.0f} B",
            joined(of["stream_text_deltas_per_reply"]),
            joined(of.get("watcher_events_per_reply", [])),
            joined(of["stream_events_per_reply"]),
        ]

    return paragraphs(
        f"History per {count(hist['tokens_per_reply'])}-token reply, medians of "
        f"{count(hist['replies'])} (the stream's text events, events the watcher got and the "
        "stream's events, reply by reply):",
        table(
            ["per reply", "history events", "history bytes", "per token", "text events",
             "watcher got", "stream held"],
            [row("one SSE watcher", hist["watched"]), row("no watcher", hist["unwatched"])],
        ),
    )  # fmt: skip


def render_context_window(results: Path) -> str:
    data = load(results, "context_window")

    def row(run: Data) -> list[str]:
        first = run["first_failed_send"]
        return [
            "default: `FitWindow()`" if run["fit_window"] else "`fit_window=None`",
            f"{count(run['answered'])} of {count(run['sends'])}",
            count(first) if first else "–",
            count(run["refused"]),
            count(run["prompt_tokens_max"]),
            count(run["prompt_tokens_mean"]),
            count(run["prompts_cut"]),
            f"{count(run['log_messages'])} / {count(run['visible_messages'])}",
            ms(run["ms_per_send_median"]),
        ]

    header = ["session", "sends answered", "first failed send", "refused", "largest prompt",
              "mean prompt", "prompts cut", "log / view messages", "send (median)"]  # fmt: skip
    return paragraphs(
        f"Window: {count(data['window'])} tokens; prompts in tokens as the server counted "
        "them. The session without `fit_window` stops five sends after its first failure.",
        table(header, [row(run) for run in data["sessions"]]),
        command(data),
    )


def render_web(results: Path) -> str:
    data = load(results, "web")
    facts = data["machine"]
    return paragraphs(
        web_first_event(data["first_event"]),
        web_load(data["load"]),
        web_fan_out(data["fan_out"]),
        web_kill(data["kill"]),
        web_history(data["history"]),
        command(data)
        + f" {facts['cpus']} CPUs, Python {facts['python']}, temporalio {facts['temporalio']},"
        f" commit {facts['commit']}.",
    )


def render_agui_long(results: Path) -> str:
    data = load(results, "agui_long")
    rows = [
        [
            count(row["messages"]),
            size(row["request_kb"] * 1024),
            size(row["response_bytes"]),
            ms(row["first_event_ms"]),
            ms(row["end_ms"]),
            ratio(row["end_ratio"]),
        ]
        for row in data["summary"]
    ]
    header = ["messages held", "request", "response", "first event", "run's end", "end ÷ short"]
    rounds = data["sizes"]["rounds"]
    return paragraphs(
        f"Medians of {count(rounds)} rounds (ABBA) per thread size:",
        table(header, rows),
        command(data),
    )


def render_eager_dispatch(results: Path) -> str:
    data = load(results, "eager_dispatch")
    medians = data["ms_per_activity_median"]
    rows = [
        ["eager (default)", ms(medians["eager_plain"]), ms(medians["eager_fair"])],
        [
            "through the queue (`--rate-limited`)",
            ms(medians["through_queue_plain"]),
            ms(medians["through_queue_fair"]),
        ],
    ]
    return paragraphs(
        f"Per activity, medians of 2 runs of {count(data['steps'])} (ABBA):",
        table(["dispatch", "server as shipped", "fairness flags on"], rows),
        command(data),
    )


FLEET_CASES = {
    "limited": "queue limit + `--rate-limited`",
    "unlimited": "no queue limit, default workers",
    "quiet_only": "quiet tenants alone, limited",
    "limited_4_partitions": "limited, Temporal's 4 partitions",
}


def fleet_case_row(label: str, case: Data) -> list[str]:
    return [
        label,
        count(case["sends"]),
        count(case["failed_sends"]),
        f"{count(case['answered_429'])} ({case['share_429']:.1%})",
        f"{case['goodput_per_s']:.1f}/s",
        seconds(case["quiet_p50_s"], 2),
        seconds(case["quiet_p95_s"], 2),
    ]


def fleet_shares(cases: Data) -> str:
    """Each tenant's share of the turns dispatched while every tenant had one waiting,
    against its weight's, in each case that had such a moment."""
    shown = {n: label for n, label in FLEET_CASES.items() if n in cases and n != "quiet_only"}
    fair = cases["limited"]["fair_shares"]
    rows = [
        [t, f"{s['weight_share']:.1%}"]
        + [ratio(cases[n]["fair_shares"]["by_tenant"][t]["ratio"]) for n in shown]
        for t, s in fair["by_tenant"].items()
    ]
    rows.append(
        ["(seconds; turns)", ""]
        + [
            f"{cases[n]['fair_shares']['window_s']:g} s; {cases[n]['fair_shares']['turns']}"
            for n in shown
        ]
    )
    return table(["tenant", "weight's share", *shown.values()], rows)


def render_fleet(results: Path) -> str:
    data = load(results, "fleet")
    cases = data["cases"]
    rows = [fleet_case_row(label, cases[n]) for n, label in FLEET_CASES.items() if n in cases]
    checks = [
        [("PASS" if t["pass"] else "FAIL"), name, json.dumps(t["value"])]
        for name, t in data["targets"].items()
    ]
    machine = data["machine"]
    header = ["case", "sends", "failed", "429s (of model calls)", "goodput"]
    return paragraphs(
        f"Provider limited to {data['provider_rps']:g} requests/s; queue limit "
        f"{data['queue_limit_rps']:g} turns/s; each queue in {data['partitions']} "
        f"partition(s) unless said; sessions {json.dumps(data['sessions'])}, "
        f"{data['messages_per_session']} messages each; weights {json.dumps(data['weights'])}.",
        table([*header, "quiet p50", "quiet p95"], rows),
        "Each tenant's share of the turns dispatched while every tenant had one waiting "
        "in the queue, ÷ its weight's share (1.00× is its weight):",
        fleet_shares(cases),
        table(["", "target", "measured"], checks),
        f"Machine: {machine['cpus']} cores, shared; load average (1 min) "
        f"{machine['load_avg_1m_before']:g} before, {machine['load_avg_1m_after']:g} after.",
        command(data),
    )


RENDERERS: dict[str, Renderer] = {
    "history_growth": render_history_growth,
    "overhead": render_overhead,
    "sessions": render_sessions,
    "sessions_1000": render_sessions_1000,
    "start_latency": render_start_latency,
    "session_memory": render_session_memory,
    "long_run": render_long_run,
    "state_cost": render_state_cost,
    "events": render_events,
    "followers": render_followers,
    "resume": render_resume,
    "checkpoints": render_checkpoints,
    "send_chaos": render_send_chaos,
    "overload": render_overload,
    "web": render_web,
    "agui_long": render_agui_long,
    "eager_dispatch": render_eager_dispatch,
    "rerun": render_rerun,
    "context_window": render_context_window,
    "actions": render_actions,
    "actions_by_latency": render_actions_by_latency,
    "bill": render_bill,
    "kill_points": render_kill_points,
    "reanchor": render_reanchor,
    "capacity": render_capacity,
    "fleet": render_fleet,
}
RENDERED_WITHIN = {
    "followers_before": "followers",
    "overhead_sandbox_all": "overhead",
    "overhead_sandbox_none": "overhead",
    "actions_by_latency_30s": "actions_by_latency",
    "kill_points_6s": "kill_points",
    "kill_points_30s": "kill_points",
}  # files another section reads


# The README


def render_all(results: Path = RESULTS) -> dict[str, str]:
    return {name: render(results) for name, render in RENDERERS.items()}


def sections(text: str) -> dict[str, str]:
    """The figures now between each pair of markers, by name."""
    return {match.group(2): match.group(3) for match in BLOCK.finditer(text)}


def between_markers(figures: str) -> str:
    return f"\n{figures}\n\n"


def rewritten(text: str, figures: dict[str, str]) -> str:
    """The README with each marked section's figures replaced; the rest as it was."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(2)
        body = between_markers(figures[name]) if name in figures else match.group(3)
        return match.group(1) + body + match.group(4)

    return BLOCK.sub(replace, text)


def unrendered(results: Path) -> list[str]:
    """Results files that no section renders."""
    names = [path.stem for path in sorted(results.glob("*.json"))]
    return [f"results/{n}.json" for n in names if n not in RENDERERS and n not in RENDERED_WITHIN]


def stale_sections(results: Path = RESULTS, readme: Path = README) -> list[str]:
    """What in the README differs from what the results give: section names, a section
    without its markers, a results file without a section. Empty when up to date."""
    present = sections(readme.read_text())
    stale = []
    for name, figures in render_all(results).items():
        if name not in present:
            stale.append(f"{name} (no <!-- --8<-- [start:{name}] --> markers)")
        elif present[name] != between_markers(figures):
            stale.append(name)
    return stale + [f"{path} (no renderer)" for path in unrendered(results)]


def write(results: Path = RESULTS, readme: Path = README) -> list[str]:
    """Rewrite the README's figures; the names of the sections that changed."""
    text = readme.read_text()
    figures = render_all(results)
    before = sections(text)
    readme.write_text(rewritten(text, figures))
    return [
        name
        for name in figures
        if name in before and before[name] != between_markers(figures[name])
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="bench/README.md's figures, from results/")
    parser.add_argument("--check", action="store_true", help="rewrite nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_sections()
        if stale:
            print(f"bench/README.md is out of date: {', '.join(stale)}", file=sys.stderr)
            print("run: .venv/bin/python -m bench.report", file=sys.stderr)
            return 1
        print("bench/README.md is up to date")
        return 0
    changed = write()
    missing = [s for s in stale_sections() if s not in RENDERERS]
    print(f"rewrote: {', '.join(changed) or 'nothing'}")
    if missing:
        print(f"still to fix by hand: {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
