"""``ratchet run``: run an agent on a prompt and print its answer."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

from ._common import at_least_one

if TYPE_CHECKING:
    from ratchet.wire import RunResult


def register(commands: argparse._SubParsersAction) -> None:
    from ._common import add_connection_arguments

    run = commands.add_parser("run", help="run an agent on a prompt and print its answer")
    run.add_argument("agent")
    run.add_argument("prompt")
    add_connection_arguments(run)
    run.add_argument(
        "--max-turns", type=at_least_one, default=25, help="turns the run may take (1 or more)"
    )
    run.add_argument(
        "--json",
        action="store_true",
        help="print the result as one JSON object; a typed answer (an agent with an "
        "output_type) as its JSON value",
    )
    run.add_argument(
        "--ui-url",
        help="Temporal Web UI base URL for the run's link (default: RATCHET_UI_URL, or "
        "http://localhost:8233 for a local server on :7233)",
    )
    run.set_defaults(func=run_once)


async def run_once(args: argparse.Namespace) -> int:
    from ratchet.errors import RunFailedError
    from ratchet.types import AgentStatus
    from ratchet.wire import RunOptions

    from ._common import connect, default_ui_url
    from ._waiting import (
        announce_decisions,
        connection_flags,
        interrupted,
        warn_without_worker,
        watching,
    )

    client = await connect(args, ui_url=args.ui_url or default_ui_url(args.address))
    handle = await client.start_run(
        args.agent, args.prompt, options=RunOptions(max_turns=args.max_turns)
    )
    notes = sys.stderr if args.json else sys.stdout  # stdout is the JSON alone
    print(f"workflow: {handle.id}", file=notes, flush=True)
    if handle.ui_url:
        print(f"ui: {handle.ui_url}", file=notes, flush=True)
    flags = connection_flags(args)
    try:
        async with watching(
            asyncio.create_task(
                warn_without_worker(client.temporal, handle.id, f"run {handle.id}")
            ),
            asyncio.create_task(announce_decisions(handle, flags, notes)),
        ):
            result = await handle.result()
    except RunFailedError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except asyncio.CancelledError:  # Ctrl-C: the run is a workflow; it does not stop
        interrupted(
            f"run {handle.id}",
            [
                f"follow it: ratchet watch {handle.id}{flags}",
                f"see it: ratchet sessions show {handle.id}{flags}",
                f"stop it: ratchet sessions stop {handle.id}{flags}",
            ],
        )
        raise
    if args.json:
        print(json.dumps(as_json(result), indent=2))
        return 0
    completed = result.status == AgentStatus.COMPLETED
    ended = "" if completed else f" · {result.status.value}"
    print(f"turns: {result.turns} · tokens: {result.usage.total_tokens}{ended}")
    print(f"\n{result.output}" if result.output or completed else "\n(no answer)")
    return 0


def as_json(result: RunResult) -> dict[str, Any]:
    """A run's result for ``--json``: ``output`` is the answer's JSON value when the
    answer is JSON (what an agent with an ``output_type`` gives), else its text, as
    the HTTP API returns it (``RunResult.output_value``)."""
    return {
        "workflow_id": result.workflow_id,
        "agent": result.agent,
        "status": result.status.value,
        "turns": result.turns,
        "usage": result.usage.model_dump(mode="json"),
        "output": result.output_value,
    }
