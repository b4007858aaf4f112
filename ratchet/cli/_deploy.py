"""``ratchet replay`` and ``ratchet deploy status|promote``: deploying new code
under running agents (``ratchet.deploy``; docs/deploying.md)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ._common import add_connection_arguments, at_least_one, connect
from ._worker import DEPLOYMENT_ENV, add_workflows_argument

if TYPE_CHECKING:
    from ratchet.deploy import ReplayReport

WORKFLOWS_HELP = "your own workflows, replayed beside Ratchet's"


def register(commands: argparse._SubParsersAction) -> None:
    replay = commands.add_parser(
        "replay",
        help="replay open runs (or saved histories) against this code: exit 1 on any "
        "non-determinism",
    )
    add_gate_arguments(replay)
    replay.add_argument("--limit", type=at_least_one, default=1000, help="most open runs to replay")
    replay.add_argument(
        "files",
        nargs="*",
        type=Path,
        help="history JSON files or folders of them (the Temporal UI's download, "
        "tests/histories/) instead of the open runs",
    )
    add_connection_arguments(replay, queue_help="replay the open runs of this task queue")
    replay.set_defaults(func=replay_command)

    deploy = commands.add_parser("deploy", help="which build serves what; promote a build")
    verbs = deploy.add_subparsers(dest="verb", required=True)
    status = verbs.add_parser("status", help="each build: status, open runs and sessions")
    add_deployment_argument(status)
    add_connection_arguments(status, task_queue=False)
    status.set_defaults(func=status_command)
    promote = verbs.add_parser(
        "promote",
        help="replay the open runs BUILD would take over against this code (run it from "
        "BUILD's checkout or image), then make BUILD current: new runs start on it, "
        "sessions move to it between messages",
    )
    promote.add_argument("build", help="the build id, as its workers' --build-id")
    add_deployment_argument(promote)
    add_gate_arguments(promote)
    promote.add_argument(
        "--ramp",
        type=float,
        metavar="PERCENT",
        help="send only this share of new runs and sessions to BUILD (0-100); promote "
        "again without --ramp to make it current",
    )
    promote.add_argument(
        "--force",
        action="store_true",
        help="promote even if no worker of BUILD polls the task queue now",
    )
    promote.add_argument(
        "--no-wake",
        action="store_true",
        help="let idle sessions move at their next message instead of now",
    )
    add_connection_arguments(promote, queue_help="the gate replays this task queue's open runs")
    promote.set_defaults(func=promote_command)


def add_gate_arguments(parser: argparse.ArgumentParser) -> None:
    add_workflows_argument(parser, WORKFLOWS_HELP)
    parser.add_argument(
        "--query",
        help="narrow the open runs replayed with a Temporal list filter, e.g. "
        "'WorkflowType=\"AgentSession\"'",
    )


def add_deployment_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--deployment",
        default=os.environ.get(DEPLOYMENT_ENV),
        help=f"the worker deployment, as its workers' --deployment (default: ${DEPLOYMENT_ENV})",
    )


async def replay_command(args: argparse.Namespace) -> int:
    from ratchet.deploy import load_history, replay, replay_open

    workflows = _workflows(args)
    if args.files:
        paths = _history_files(args.files)
        report = await replay([load_history(p) for p in paths], workflows=workflows)
    else:
        client = await connect(args)
        report = await replay_open(client, query=args.query, limit=args.limit, workflows=workflows)
    for line in report.lines():
        print(line)
    if not args.files and args.query and not report.replayed and report.ok:
        print(
            f"warning: no open run matched --query {args.query!r}; workflow types are "
            "Temporal's names: AgentRun, AgentRunWorkflow (runs started by 0.1), "
            "AgentSession, ScheduledSend, RerunBatch, yours.",
            file=sys.stderr,
        )
    return 0 if report.ok else 1


async def status_command(args: argparse.Namespace) -> int:
    from ratchet.deploy import deployment_status

    client = await connect(args)
    status = await deployment_status(client, _deployment(args))
    for line in status.lines():
        print(line)
    return 0


async def promote_command(args: argparse.Namespace) -> int:
    from ratchet.deploy import promote

    client = await connect(args)
    deployment = _deployment(args)
    result = await promote(
        client,
        deployment,
        args.build,
        workflows=_workflows(args),
        query=args.query,
        ramp=args.ramp,
        wake_sessions=not args.no_wake,
        force=args.force,
    )
    for line in result.gate.lines():
        print(line)
    if not result.promoted:
        print(f"error: not promoted: {_refusal(result.gate, args.build)}", file=sys.stderr)
        return 1
    if args.ramp is not None:
        print(f"{args.build} of {deployment} now takes {args.ramp:g}% of new runs and sessions")
    else:
        moving = (
            "sessions on other builds move to it at their next message"
            if args.no_wake
            else f"{result.sessions_woken} open session(s) on other builds woken: idle ones "
            "move to it now, the others after their run in progress"
        )
        print(
            f"{args.build} is the current build of {deployment}: new runs and sessions start "
            f"on it; {moving}; runs in flight finish where they started (ratchet deploy status)"
        )
    return 0


def _refusal(gate: ReplayReport, build: str) -> str:
    """Why the gate refused, and the fix for each reason it found."""
    reasons = []
    if gate.not_given:
        reasons.append(
            f"{gate.not_given} open run(s) above are of your own workflows, which the gate "
            "was not given: pass them with --workflows module:ATTR (as your workers' "
            "--workflows; repeatable) and promote again."
        )
    if gate.failed:
        reasons.append(
            f"{build} would fail {gate.failed} run(s) above. Put the change behind "
            "workflow.patched() or give it a new workflow type (docs/deploying.md)."
        )
    return " ".join(reasons)


def _deployment(args: argparse.Namespace) -> str:
    if not args.deployment:
        raise SystemExit(
            f"error: name the worker deployment: --deployment NAME (or ${DEPLOYMENT_ENV}), "
            "as its workers were started with."
        )
    return args.deployment


def _workflows(args: argparse.Namespace) -> list[type]:
    from ratchet.worker import load_workflows

    return [w for spec in args.workflows or [] for w in load_workflows(spec)]


def _history_files(paths: list[Path]) -> list[Path]:
    from ratchet.errors import InvalidInputError

    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(path.rglob("*.json"))
        elif path.is_file():
            files.append(path)
        else:
            raise InvalidInputError(f"{path}: no such file or folder of history JSON files.")
    if not files:
        raise InvalidInputError(f"No history JSON files in {', '.join(map(str, paths))}.")
    return files
