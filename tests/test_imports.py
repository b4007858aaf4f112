"""What importing Ratchet costs: a CLI command pays its imports before it does anything,
and the suite pays them in every CLI and worker process it starts. The provider and
web SDKs load only with the code that uses them (``openai`` alone takes about a
second: ``python -X importtime -c "import ratchet.deploy"`` shows who brings it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

ENGINE_AND_COMMANDS = (
    "ratchet",
    "ratchet.agents",
    "ratchet.client",
    "ratchet.worker",
    "ratchet.deploy",
    "ratchet.evals",
    "ratchet.testing",
    "ratchet.examples",  # the demo's agents, on a ScriptedModel without OPENAI_API_KEY
    *(f"ratchet.cli._{command}" for command in ("run", "sessions", "deploy", "worker", "eval")),
)
OPTIONAL_SDKS = ("openai", "anthropic", "mcp", "fastapi", "uvicorn", "ag_ui", "jsonschema", "jwt")


@pytest.mark.slow  # a fresh interpreter: this one has imported everything already
def test_the_engine_and_the_cli_commands_load_no_provider_or_web_sdk():
    probe = (
        f"import sys\nfor m in {ENGINE_AND_COMMANDS!r}: __import__(m)\n"
        f"print(' '.join(s for s in {OPTIONAL_SDKS!r} if s in sys.modules))"
    )
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [], "loaded on import; import them where they are used"
