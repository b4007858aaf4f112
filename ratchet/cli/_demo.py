"""``ratchet demo``: a run surviving a killed worker, on its own dev server."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path


def register(commands: argparse._SubParsersAction) -> None:
    demo = commands.add_parser("demo", help="show a run surviving a killed worker")
    demo.add_argument("--keep", action="store_true", help="keep the server and UI up afterwards")
    demo.set_defaults(func=run)


async def run(args: argparse.Namespace) -> int:
    from ._demo_run import run_demo

    return await run_demo(args.keep, Path(tempfile.mkdtemp(prefix="ratchet-demo-")))
