"""``POST /v1/agui`` driven by the official AG-UI client, as a web frontend uses it.

The flows are Node tests (``tests/agui_client/test/*.test.mjs``) on
``@ag-ui/client``'s ``HttpAgent``, pinned by ``tests/agui_client/package-lock.json``.
Each file runs here against this module's ``ratchet web`` (and a replica of it) and
worker (they need the dev server and the agents that the fixtures start), so they
run in the README's ``pytest`` command like every other test. ``.ci/run`` installs the client with
``npm ci`` first; where it is missing, this module does the same. Needs Node 20+.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ..web_http import ALICE, Web

CLIENT = Path(__file__).resolve().parents[1] / "agui_client"
SCRIPTS = sorted((CLIENT / "test").glob("*.test.mjs"))
PINNED = json.loads((CLIENT / "package.json").read_text())["dependencies"]["@ag-ui/client"]

RUN_LIMIT = 480
"""Seconds a test file may take (each of its tests has a timeout of its own)."""

pytestmark = pytest.mark.timeout(600)


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("Node.js 20 or later is needed for the AG-UI client tests: install it.")
    return node


@pytest.fixture(scope="module")
def installed() -> Path:
    """The pinned client in ``tests/agui_client/node_modules`` (``npm ci`` if missing)."""
    _node()
    found = CLIENT / "node_modules" / "@ag-ui" / "client" / "package.json"
    if not found.exists() or json.loads(found.read_text())["version"] != PINNED:
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("npm is needed to install the AG-UI client (tests/agui_client).")
        argv = [npm, "ci", "--no-audit", "--no-fund"]
        ci = subprocess.run(argv, cwd=CLIENT, capture_output=True, text=True, check=False)
        assert ci.returncode == 0, f"npm ci in {CLIENT} failed:\n{ci.stdout}{ci.stderr}"
    return CLIENT


async def _run(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=CLIENT,
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        output, _ = await asyncio.wait_for(process.communicate(), RUN_LIMIT)
    except TimeoutError:
        process.kill()
        output, _ = await process.communicate()
        return -1, output.decode(errors="replace") + f"\n(killed after {RUN_LIMIT} s)"
    return process.returncode or 0, output.decode(errors="replace")


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name.split(".")[0])
async def test_the_official_client(
    script: Path, installed: Path, web: Web, web_replica: Web, worker: None
):
    env = {"RATCHET_URL": web.url, "RATCHET_REPLICA_URL": web_replica.url}
    env |= {"RATCHET_TOKEN": ALICE, "NO_COLOR": "1"}
    # Forced exit: a test that timed out may leave a stream open.
    argv = [_node(), "--test", "--test-force-exit", "--test-reporter=spec"]
    argv.append(str(script.relative_to(installed)))
    code, output = await _run(argv, env)
    assert code == 0, f"node --test {script.name} failed:\n{output}"
