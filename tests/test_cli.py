"""The ``ratchet`` command, run as a user would run it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ratchet.devserver import DevServer

from .conftest import ROOT, release

RATCHET = [sys.executable, "-m", "ratchet.cli"]


def ratchet(
    *args: str, server: DevServer | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    if server is not None:
        env["TEMPORAL_ADDRESS"] = server.address
    return subprocess.run(
        [*RATCHET, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def test_demo_kills_a_worker_and_the_run_resumes():
    done = ratchet("demo", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "worker A killed with SIGKILL in the middle of a turn" in out
    assert "✓ turn 2 checkpointed (attempt 2" in out
    assert "Tool calls finished before the kill and run again by worker B: 0." in out
    assert "Answer: Lisbon wins" in out
    assert "/namespaces/default/workflows/run-travel-" in out


def test_run_prints_the_answer_workflow_id_and_ui_link(
    temporal_server: DevServer, worker_processes, task_queue: str, event_log: Path
):
    worker_processes()
    run = subprocess.Popen(
        [
            *RATCHET,
            "run",
            "steps",
            "do it",
            "--task-queue",
            task_queue,
            "--ui-url",
            "http://ui.example:8233",
        ],
        cwd=ROOT,
        env={**os.environ, "TEMPORAL_ADDRESS": temporal_server.address},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert run.stdout is not None
    workflow_line, ui_line = run.stdout.readline(), run.stdout.readline()
    assert workflow_line.startswith("workflow: run-steps-")
    workflow_id = workflow_line.split()[1]
    for n in (1, 2, 3):
        release(event_log, workflow_id, n)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    assert ui_line.startswith(
        f"ui: http://ui.example:8233/namespaces/default/workflows/{workflow_id}/"
    )
    assert out.rstrip().endswith("all 3 steps done")


def test_run_of_an_unknown_agent_exits_non_zero_with_the_reason(
    temporal_server: DevServer, worker_processes, task_queue: str
):
    worker_processes()
    done = ratchet("run", "nobody", "hello", "--task-queue", task_queue, server=temporal_server)
    assert done.returncode == 1
    assert 'Agent "nobody" is not registered' in done.stderr
    assert "registered: crash, steps" in done.stderr


def test_worker_with_a_bad_agents_spec_exits_with_a_clear_error():
    done = ratchet("worker", "--agents", "no_such_module:AGENTS")
    assert done.returncode == 2
    assert "Cannot load agents from 'no_such_module:AGENTS'" in done.stderr
