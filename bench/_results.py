"""Writing a benchmark's result: the JSON file under ``bench/results`` with the
command that made it (so it can be re-run), echoed to standard output."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def write_result(result: dict[str, Any], out: Path, bench: str) -> None:
    """Write ``result`` to ``out`` with its command, ``python -m bench.<bench> ...``
    and this process's arguments, and print it."""
    result["command"] = " ".join([f"python -m bench.{bench}", *sys.argv[1:]])
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
