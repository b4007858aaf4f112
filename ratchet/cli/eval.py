"""``ratchet eval``: rerun recorded sessions on a changed agent, or run cases on two
agents; write the report; exit 1 when the gate fails (for a CI step)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any


def register(commands: argparse._SubParsersAction) -> None:
    from .common import add_connection_arguments

    evaluate = commands.add_parser("eval", help="evaluate a changed agent, and gate on it")
    verbs = evaluate.add_subparsers(dest="verb", required=True)
    rerun = verbs.add_parser("rerun", help="rerun recorded sessions (or runs) on an agent")
    rerun.add_argument("sources", nargs="*", help="session or run ids")
    rerun.add_argument(
        "--query",
        help="a visibility query for the sources, e.g. 'AgentName = \"support\"'",
    )
    rerun.add_argument("--limit", type=int, default=100, help="most sources --query takes")
    rerun.add_argument("--free-running", action="store_true")
    rerun.add_argument(
        "--unrecorded",
        choices=("refuse", "live"),
        default="refuse",
        help="a tool call the recording does not hold: refused (the model is told) or run",
    )
    run = verbs.add_parser("run", help="run a JSON file of cases on --baseline and --agent")
    run.add_argument("cases", help='a JSON list of {"id"?, "prompt", "expected"?}')
    run.add_argument("--baseline", required=True, help="the agent to compare against")
    for parser in (rerun, run):
        parser.add_argument("--agent", required=True, help="the changed agent (registered)")
        parser.add_argument(
            "--evaluators",
            help="module:NAME of a list of evaluators (or a function returning one)",
        )
        parser.add_argument("--min-score", type=float)
        parser.add_argument(
            "--max-cost-increase", type=_fraction, help="e.g. 10%% or 0.1 (of the old cost)"
        )
        parser.add_argument("--out", default="eval-report", help="directory for the report")
        add_connection_arguments(parser)
        parser.set_defaults(func=evaluate_command)


async def evaluate_command(args: argparse.Namespace) -> int:
    from ratchet.evals import compare, load_cases
    from ratchet.evals.rerun import find_sources, rerun_many

    from .common import connect

    evaluators = _evaluators(args.evaluators)
    if args.min_score is not None and not evaluators:
        print("error: --min-score needs --evaluators to score with", file=sys.stderr)
        return 2
    client = await connect(args)
    if args.verb == "run":
        cases = load_cases(args.cases)
        report = await compare(
            client, cases, old=args.baseline, new=args.agent, evaluators=evaluators
        )
    else:
        sources = list(args.sources)
        if args.query:
            sources += await find_sources(client, args.query, limit=args.limit)
        if not sources:
            print(
                "error: no sources: give session ids or a --query that finds some", file=sys.stderr
            )
            return 2
        report = await rerun_many(
            client,
            sources,
            agent=args.agent,
            evaluators=evaluators,
            unrecorded=args.unrecorded,
            free_running=args.free_running,
        )
    paths = report.write(args.out)
    print(
        f"{len(report.cases)} cases · score {report.old_score:.3f} -> {report.new_score:.3f} · "
        f"report: {', '.join(map(str, paths))}"
    )
    failures = report.gate(min_score=args.min_score, max_cost_increase=args.max_cost_increase)
    for failure in failures:
        print(f"gate: {failure}", file=sys.stderr)
    return 1 if failures else 0


def _fraction(text: str) -> float:
    try:
        return float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a fraction (0.1) or a percentage (10%)"
        ) from None


def _evaluators(spec: str | None) -> list[Any]:
    if spec is None:
        return []
    module_name, _, attr = spec.partition(":")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    value: Any = getattr(importlib.import_module(module_name), attr)
    found: Any = value() if callable(value) else value
    return list(found)
