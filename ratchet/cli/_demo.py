"""``ratchet demo``: a run surviving a killed worker, on its own dev server."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path


def register(commands: argparse._SubParsersAction) -> None:
    demo = commands.add_parser("demo", help="show a run surviving a killed worker")
    demo.add_argument("--keep", action="store_true", help="keep the server and UI up afterwards")
    demo.set_defaults(func=run)


async def run(args: argparse.Namespace) -> int:
    from ._demo_run import run_demo

    state_dir = Path(tempfile.mkdtemp(prefix="ratchet-demo-"))
    code = 1
    try:
        code = await run_demo(args.keep, state_dir)
        return code
    finally:
        if code == 0:
            shutil.rmtree(state_dir, ignore_errors=True)
        else:  # what went wrong is in the server's log
            print(f"The dev server's log is kept in {state_dir}", file=sys.stderr)
