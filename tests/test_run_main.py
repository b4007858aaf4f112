"""``ratchet.run_main``: user scripts exit with their real code, every time."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ratchet.client import AgentClient
from ratchet.client.client import DEFAULT_TASK_QUEUE
from ratchet.devserver import DevServer
from ratchet.examples import AGENTS
from ratchet.worker import build_worker

from .conftest import ROOT

README_RUNS = 20


def run_script(source: str, tmp_path: Path, server: DevServer | None = None):
    script = tmp_path / "script.py"
    script.write_text(source)
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    if server is not None:
        env["TEMPORAL_ADDRESS"] = server.address
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def readme_script() -> str:
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    [script] = [block for block in blocks if "ratchet.run_main(main)" in block]
    return script


@pytest.mark.parametrize(
    "body, code, stderr",
    [
        ("return None", 0, ""),
        ("return 3", 3, ""),
        ("raise SystemExit(4)", 4, ""),
        ("raise SystemExit('no agent named x')", 1, "no agent named x"),
        ("raise ValueError('bad prompt')", 1, "ValueError: bad prompt"),
        ("raise KeyboardInterrupt", 130, ""),
    ],
)
def test_run_main_exits_with_what_main_returned_or_raised(
    body: str, code: int, stderr: str, tmp_path: Path
):
    source = (
        "import ratchet\n"
        "async def main():\n"
        "    print('ran', flush=False)\n"
        f"    {body}\n"
        "ratchet.run_main(main)\n"
        "print('not reached')\n"
    )
    done = run_script(source, tmp_path)
    assert done.returncode == code, done.stderr
    assert done.stdout == "ran\n"  # buffered output is flushed, nothing runs after
    assert stderr in done.stderr


async def test_the_readme_script_exits_zero_every_time(
    temporal_server: DevServer, client: AgentClient, tmp_path: Path
):
    """The README's script connects, runs an agent and leaves; a plain asyncio.run
    aborted at exit (134) in 2 of 12 runs."""
    source = readme_script()
    worker_client = AgentClient(client.temporal, task_queue=DEFAULT_TASK_QUEUE)
    codes = []
    async with build_worker(worker_client, AGENTS):
        for _ in range(README_RUNS):
            done = await asyncio.to_thread(run_script, source, tmp_path, temporal_server)
            assert done.returncode == 0, done.stdout + done.stderr
            codes.append(done.returncode)
            assert done.stdout.count("\n") == 1 and "tokens" not in done.stderr
    assert codes == [0] * README_RUNS
