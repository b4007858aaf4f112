"""``ratchet eval``: rerun recorded sessions on a changed agent, or run cases on two
agents; write the report; exit 1 when the gate fails (for a CI step)."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

from ._common import at_least_one
from ._printing import counted

if TYPE_CHECKING:
    from ratchet.client import AgentClient
    from ratchet.evals import Report, Rerun, RerunBatch

POLL_S = 0.5
"""How often a batch run with ``--unrecorded ask`` looks for calls to decide."""


def register(commands: argparse._SubParsersAction) -> None:
    from ._common import add_connection_arguments

    evaluate = commands.add_parser("eval", help="evaluate a changed agent, and gate on it")
    verbs = evaluate.add_subparsers(dest="verb", required=True)
    rerun = verbs.add_parser("rerun", help="rerun recorded sessions (or runs) on an agent")
    rerun.add_argument("sources", nargs="*", help="session or run ids")
    rerun.add_argument(
        "--query",
        help="a visibility query for the sources, e.g. 'AgentName = \"support\"'",
    )
    rerun.add_argument("--limit", type=at_least_one, default=100, help="most sources --query takes")
    rerun.add_argument(
        "--free-running",
        action="store_true",
        help="carry the new agent's own answers forward (default: teacher-forced, each "
        "case on the recorded conversation)",
    )
    rerun.add_argument(
        "--unrecorded",
        choices=("refuse", "live", "ask"),
        default="refuse",
        help="a tool call the recording does not hold: refused (the model is told), run, "
        "or asked about here (y runs it; end of input refuses the rest)",
    )
    rerun.add_argument(
        "--approvals",
        choices=("recorded", "policy"),
        default="recorded",
        help="recorded calls: answered without asking (recorded), or the new agent's "
        "approval rules decide first (policy; asked here)",
    )
    rerun.add_argument(
        "--concurrency",
        type=_concurrency,
        default=20,
        help="cases run at once (a batch: at most 50)",
    )
    rerun.add_argument(
        "--attach",
        metavar="BATCH_ID",
        action="append",
        help="report on a batch started earlier (say, by a command that was stopped); "
        "repeat it for each batch a large dataset was split over",
    )
    rerun.add_argument(
        "--dataset",
        help="a snapshot file from `ratchet eval export` (its conversations travel in the "
        "batches' inputs: no history is read)",
    )
    export = verbs.add_parser(
        "export", help="snapshot recorded sessions into a dataset file (outlives retention)"
    )
    export.add_argument("sources", nargs="*", help="session or run ids")
    export.add_argument("--query", help="a visibility query for the sources")
    export.add_argument(
        "--limit", type=at_least_one, default=100, help="most sources --query takes"
    )
    export.add_argument("--out", required=True, help="the dataset file to write (JSON)")
    add_connection_arguments(export)
    export.set_defaults(func=export_command)
    run = verbs.add_parser("run", help="run a JSON file of cases on --baseline and --agent")
    run.add_argument("cases", help='a JSON list of {"id"?, "prompt", "expected"?}')
    run.add_argument("--baseline", required=True, help="the agent to compare against")
    for parser in (rerun, run):
        parser.add_argument("--agent", required=True, help="the changed agent (registered)")
        parser.add_argument(
            "--evaluators",
            help="module:NAME of a list of evaluators (or a function returning one)",
        )
        parser.add_argument(
            "--min-score", type=float, help="fail (exit 1) when the new agent scores less"
        )
        parser.add_argument(
            "--max-cost-increase", type=_fraction, help="e.g. 10%% or 0.1 (of the old cost)"
        )
        parser.add_argument("--out", default="eval-report", help="directory for the report")
        add_connection_arguments(parser)
        parser.set_defaults(func=evaluate_command)


async def evaluate_command(args: argparse.Namespace) -> int:
    """Exits 0 when the gate passes, 1 when it fails or a case did not run, 2 when the
    arguments or files given cannot be evaluated (so a CI step can tell a worse agent
    from a typo)."""
    from ratchet.errors import UsageError

    try:
        return await _evaluate(args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


async def _evaluate(args: argparse.Namespace) -> int:
    from ratchet.evals import (
        Source,
        compare,
        find_sources,
        get_rerun,
        load_cases,
        load_dataset,
        start_rerun,
    )

    from ._common import connect

    evaluators = _evaluators(args.evaluators)
    if args.min_score is not None and not evaluators:
        print("error: --min-score needs --evaluators to score with", file=sys.stderr)
        return 2
    # Files first: a wrong path is named before anything connects or starts.
    cases = load_cases(args.cases) if args.verb == "run" else []
    dataset = load_dataset(args.dataset) if getattr(args, "dataset", None) else None
    client = await connect(args)
    if args.verb == "run":
        report = await compare(
            client, cases, old=args.baseline, new=args.agent, evaluators=evaluators
        )
    elif args.attach and (args.sources or args.query or args.dataset):
        print(
            "error: --attach reports on batches already started: give no sources, --query "
            "or --dataset with it",
            file=sys.stderr,
        )
        return 2
    elif args.attach:
        report = await _rerun_report(client, get_rerun(client, args.attach), evaluators)
    else:
        sources: list[Source] = list(args.sources)
        if dataset is not None:
            sources += dataset.snapshots
        if args.query:
            sources += await find_sources(client, args.query, limit=args.limit)
        if not sources:
            print(
                "error: no sources: give session ids, a --query that finds some or a --dataset",
                file=sys.stderr,
            )
            return 2
        rerun = await start_rerun(
            client,
            sources,
            agent=args.agent,
            unrecorded=args.unrecorded,
            approvals=args.approvals,
            concurrency=args.concurrency,
            free_running=args.free_running,
        )
        ids = rerun.ids
        attach = " ".join(f"--attach {batch_id}" for batch_id in ids)
        print(
            f"{'batches' if len(ids) > 1 else 'batch'} {', '.join(ids)}: "
            f"{counted(len(sources), 'source')}; if this command stops, "
            f"{'they go' if len(ids) > 1 else 'it goes'} on: "
            f"ratchet eval rerun {attach} "
            f"--agent {args.agent}",
            file=sys.stderr,
        )
        report = await _rerun_report(client, rerun, evaluators)
    not_run = 0
    for case in report.cases:
        if case.case.metadata.get("unreadable"):
            print(f"warning: not rerun: {case.new.error}", file=sys.stderr)
        elif case.new.error:  # else only in report.json
            print(f"warning: case {case.case.id} failed: {case.new.error}", file=sys.stderr)
        not_run += bool(case.new.error)
    _warn_broken_evaluators(report)
    paths = report.write(args.out)
    scored = "" if evaluators else " (no --evaluators: nothing scored the answers)"
    print(
        f"{counted(len(report.cases), 'case')} · "
        f"score {report.old_score:.3f} -> {report.new_score:.3f}"
        f"{scored} · report: {', '.join(map(str, paths))}"
    )
    failures = report.gate(min_score=args.min_score, max_cost_increase=args.max_cost_increase)
    for failure in failures:
        print(f"gate: {failure}", file=sys.stderr)
    if not_run and not failures:  # a gate counts them; without one they still fail
        print(
            f"error: {not_run} of {counted(len(report.cases), 'case')} did not run (see the "
            "warnings above; the report has each error)",
            file=sys.stderr,
        )
    return 1 if failures or not_run else 0


def _warn_broken_evaluators(report: Report) -> None:
    """An evaluator that raised scored 0 (the report says why): say so here too, once
    per evaluator and error, or a typo in one reads as a worse agent."""
    from ratchet.evals import EVALUATOR_FAILED

    said: set[str] = set()
    for compared in report.cases:
        for score in (compared.old_score, compared.new_score):
            for name, each in score.scores.items():
                why = each.reason or ""
                if why.startswith(EVALUATOR_FAILED) and f"{name}{why}" not in said:
                    said.add(f"{name}{why}")
                    error = why.removeprefix(EVALUATOR_FAILED)
                    print(f"warning: evaluator {name} failed:{error}", file=sys.stderr)


async def export_command(args: argparse.Namespace) -> int:
    from ratchet.evals import export_dataset, find_sources

    from ._common import connect

    client = await connect(args)
    sources = list(args.sources)
    if args.query:
        sources += await find_sources(client, args.query, limit=args.limit)
    if not sources:
        print("error: no sources: give session ids or a --query that finds some", file=sys.stderr)
        return 2
    dataset = await export_dataset(client, sources, query=args.query)
    path = dataset.write(args.out)
    cases = sum(len(s.cases()) for s in dataset.snapshots)
    print(f"{counted(len(dataset.snapshots), 'source')}, {counted(cases, 'case')}: {path}")
    return 0


async def _rerun_report(client: AgentClient, rerun: Rerun, evaluators: list[Any]) -> Report:
    """Wait for the rerun, deciding at this terminal what its cases' runs wait for
    (``--unrecorded ask``, ``--approvals policy``, the agent's own approval rules or
    questions), so a batch never waits unseen."""
    from ._waiting import warn_without_worker

    decisions = asyncio.create_task(_decide_at_terminal(client, rerun.batches))
    stalls = [  # a batch no worker takes says so, naming the task queue to serve
        asyncio.create_task(warn_without_worker(client.temporal, batch, f"batch {batch}"))
        for batch in rerun.ids
    ]
    try:
        return await rerun.report(evaluators)
    finally:
        for task in (decisions, *stalls):
            task.cancel()
        await asyncio.gather(decisions, *stalls, return_exceptions=True)


async def _decide_at_terminal(client: AgentClient, batches: list[RerunBatch]) -> None:
    """Ask at the terminal about each call a case's run waits on; end of input
    refuses the rest (an unattended run never hangs on a question)."""
    from ._terminal import decide, read_line

    asked: set[str] = set()
    closed = False

    async def ask(prompt: str) -> str:
        nonlocal closed
        answer = "/quit" if closed else await read_line(prompt)
        closed = closed or answer == "/quit"
        return answer

    while True:
        try:
            running = [run_id for batch in batches for run_id in await batch.running()]
        except Exception as e:  # noqa: BLE001 - a worker restarting: look again
            hint = ""
            if "Workflow Task in failed state" in str(e):  # e.g. no worker hosts RerunBatch
                hint = (
                    f" If the workers of task queue {client.task_queue!r} log 'RerunBatch is "
                    "not registered', give them EvalsPlugin (`ratchet worker` has it): "
                    "build_worker(..., plugins=[EvalsPlugin()])."
                )
            print(
                f"warning: could not list the batch's runs ({e}); trying again.{hint}",
                file=sys.stderr,
            )
            running = []
        for run_id in running:
            run = client.get_run(run_id)
            try:
                waiting = await run.pending()
            except Exception:  # noqa: BLE001 - finished meanwhile, or its worker is away
                continue
            for item in waiting:
                if item.action.id not in asked:
                    asked.add(item.action.id)
                    print(f"\n{run_id}:", flush=True)
                    await decide(run, item, ask, by="eval")
        await asyncio.sleep(POLL_S)


def _concurrency(text: str) -> int:
    """1 to a batch's most child runs in flight at once (50)."""
    from ratchet.evals import MAX_CONCURRENCY  # here: --help loads no evals

    value = at_least_one(text)
    if value > MAX_CONCURRENCY:
        raise argparse.ArgumentTypeError(
            f"{text!r} is more than {MAX_CONCURRENCY}, a batch's most at once"
        )
    return value


def _fraction(text: str) -> float:
    try:
        return float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a fraction (0.1) or a percentage (10%)"
        ) from None


def _evaluators(spec: str | None) -> list[Any]:
    """The evaluators ``module:NAME`` names: a list of them, or a function returning one."""
    from ratchet.errors import InvalidInputError

    if spec is None:
        return []
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise InvalidInputError(
            f"--evaluators {spec!r}: give module:NAME, e.g. evals.support:EVALUATORS."
        )
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        value: Any = getattr(importlib.import_module(module_name), attr)
    except ImportError as e:
        raise InvalidInputError(f"--evaluators {spec}: cannot import {module_name}: {e}.") from e
    except AttributeError:
        raise InvalidInputError(f"--evaluators {spec}: {module_name} has no {attr}.") from None
    found: Any = value() if callable(value) else value
    if isinstance(found, str | bytes) or not hasattr(found, "__iter__"):
        raise InvalidInputError(
            f"--evaluators {spec} is a {type(found).__name__}: it must be a list of "
            "evaluators (or a function returning one)."
        )
    evaluators = list(found)
    for evaluator in evaluators:
        if not callable(evaluator):
            raise InvalidInputError(
                f"--evaluators {spec} holds {evaluator!r:.60}, which is not an evaluator "
                "(a function of the case and the outcome)."
            )
    return evaluators
