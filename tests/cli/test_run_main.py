"""``ratchet.run_main``: user scripts exit with their real code, every time."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ratchet.devserver import DevServer, free_port

from ..conftest import ROOT

QUICKSTART_RUNS = 12


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


@pytest.mark.parametrize(
    "body, code, stderr",
    [
        ("return None", 0, ""),
        ("return 3", 3, ""),
        ("raise SystemExit(4)", 4, ""),
        ("raise SystemExit('no agent named x')", 1, "no agent named x"),
        ("raise ValueError('bad prompt')", 1, "ValueError: bad prompt"),
        ("raise ratchet.errors.InvalidInputError('bad')", 1, "error: bad\n  (at "),
        ("raise KeyboardInterrupt", 130, ""),
    ],
)
@pytest.mark.slow  # a child process
def test_run_main_exits_with_what_main_returned_or_raised(
    body: str, code: int, stderr: str, tmp_path: Path
):
    source = (
        "import ratchet\n"
        "import ratchet.errors\n"
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


def test_the_quickstart_exits_zero_every_time(temporal_server: DevServer, tmp_path: Path):
    """The quickstart (README, docs) starts a worker, runs an agent and leaves; a
    plain asyncio.run aborted at exit (134) in 2 of 12 runs."""
    source = (ROOT / "examples" / "quickstart.py").read_text()
    assert 'task_queue="quickstart"' in source

    def once(n: int) -> subprocess.CompletedProcess[str]:
        # Three at a time, each on a task queue of its own (a worker leaving must not
        # hold another's run), in a directory of its own.
        own = source.replace('task_queue="quickstart"', f'task_queue="quickstart-{n}"')
        (tmp_path / str(n)).mkdir()
        return run_script(own, tmp_path / str(n), temporal_server)

    with ThreadPoolExecutor(3) as pool:
        runs = list(pool.map(once, range(QUICKSTART_RUNS)))
    for done in runs:
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.count("\n") == 2 and "turns" in done.stdout
    assert [done.returncode for done in runs] == [0] * QUICKSTART_RUNS


@pytest.mark.slow  # a child process
def test_the_quickstart_without_a_server_names_the_address_in_one_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    address = f"127.0.0.1:{free_port()}"
    monkeypatch.setenv("TEMPORAL_ADDRESS", address)
    done = run_script((ROOT / "examples" / "quickstart.py").read_text(), tmp_path)
    assert done.returncode == 1
    # One line saying what to do, and where (a 40-line traceback of three errors before).
    error, where = done.stderr.splitlines()
    assert error.startswith(f"error: No Temporal server answers at {address}"), done.stderr
    assert "`ratchet server`" in error
    assert where.startswith("  (at ") and "script.py:" in where and "in main)" in where
