"""The ``ratchet`` command, run as a user would run it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ratchet import devserver
from ratchet.devserver import DevServer, free_port, temporal_binary

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


@pytest.mark.slow
def test_demo_kills_a_worker_and_the_run_resumes():
    done = ratchet("demo", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "worker A killed with SIGKILL in the middle of a turn" in out
    assert "✓ turn 2 checkpointed (attempt 2" in out
    assert "Tool calls finished before the kill and run again by worker B: 0." in out
    assert "Answer: Lisbon wins" in out
    assert "/namespaces/default/workflows/" not in out  # no link to a stopped server
    assert "`ratchet demo --keep` keeps it and its Web UI up" in out


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
    assert "registered: chaos, crash, invoice, noter, noter-v2, pair, steps" in done.stderr


def test_run_json_prints_a_typed_answer_as_its_value(
    temporal_server: DevServer, worker_processes, task_queue: str
):
    worker_processes()
    done = ratchet(
        "run", "invoice", "what does acme owe?", "--json", "--task-queue", task_queue,
        server=temporal_server,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)  # stdout is the JSON alone
    assert result["output"] == {"customer": "acme", "total_eur": 120.5}
    assert result["status"] == "COMPLETED" and result["turns"] == 1
    assert result["workflow_id"] in done.stderr


def test_worker_with_a_bad_agents_spec_exits_with_a_clear_error():
    done = ratchet("worker", "--agents", "no_such_module:AGENTS")
    assert done.returncode == 2
    assert "Cannot load agents from 'no_such_module:AGENTS'" in done.stderr


def test_run_says_when_no_worker_polls_its_task_queue(temporal_server: DevServer, task_queue: str):
    run = subprocess.Popen(
        [*RATCHET, "run", "steps", "do it", "--task-queue", task_queue],
        cwd=ROOT,
        env={**os.environ, "TEMPORAL_ADDRESS": temporal_server.address},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert run.stdout is not None and run.stderr is not None
    workflow_id = run.stdout.readline().split()[1]
    note = run.stderr.readline()  # it waited silently for ever before
    run.kill()
    run.communicate()
    subprocess.run(
        [
            temporal_binary(),
            "workflow",
            "terminate",
            "--workflow-id",
            workflow_id,
            "--address",
            temporal_server.address,
            "--reason",
            "test over",
        ],
        capture_output=True,
        check=True,
    )
    assert note.startswith(f"note: no worker polls task queue '{task_queue}'")
    assert f"ratchet worker --agents myapp.agents:AGENTS --task-queue {task_queue}" in note


def no_answer_address() -> str:
    return f"127.0.0.1:{free_port()}"


@pytest.mark.parametrize(
    "command",
    [
        ["run", "steps", "hi"],
        ["chat", "steps"],
        ["sessions", "list"],
        ["sessions", "show", "session-x"],
        ["watch", "session-x"],
        ["setup"],
        ["worker"],
    ],
)
def test_without_a_server_a_command_prints_one_line_naming_the_address(command: list[str]):
    address = no_answer_address()
    done = ratchet(*command, "--address", address)
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr  # a 30-line traceback (or exit 134) before
    assert f"no Temporal server answers at {address}" in done.stderr
    assert "`ratchet server`" in done.stderr


def test_worker_imports_agents_from_the_directory_it_runs_in(
    temporal_server: DevServer, task_queue: str, tmp_path: Path
):
    package = tmp_path / "myapp"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "agents.py").write_text(
        "from ratchet.agents import ScriptedModel, ToolCallingAgent\n"
        "AGENTS = {'hello': lambda: ToolCallingAgent(ScriptedModel(['hi from myapp']), [])}\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TEMPORAL_ADDRESS"] = temporal_server.address
    worker = subprocess.Popen(
        [*RATCHET, "worker", "--agents", "myapp.agents:AGENTS", "--task-queue", task_queue],
        cwd=tmp_path,  # "No module named 'myapp'" before
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert worker.stdout is not None
        first = worker.stdout.readline()
        assert "worker ready" in first, first + worker.stdout.read()
        done = ratchet("run", "hello", "hi", "--task-queue", task_queue, server=temporal_server)
    finally:
        worker.terminate()
        worker.communicate(timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("hi from myapp")


def test_a_reader_that_leaves_early_gets_no_traceback(temporal_server: DevServer):
    listing = subprocess.Popen(
        [*RATCHET, "sessions", "list"],
        cwd=ROOT,
        env={**os.environ, "TEMPORAL_ADDRESS": temporal_server.address},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert listing.stdout is not None and listing.stderr is not None
    listing.stdout.close()  # `ratchet sessions list | head -0`
    err = listing.stderr.read().decode()
    assert listing.wait(60) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err


def server_children(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(child) for child in children]


def gone(pid: int) -> bool:
    """Exited (a zombie nobody reaped counts: it runs nothing)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def wait_until(condition, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def start_server_command() -> tuple[subprocess.Popen[str], int, Path]:
    # An explicit --port is not chosen again when taken, so on a shared machine the
    # port free_port() offered can be gone before the command binds it (CI saw it).
    for _ in range(5):
        server = subprocess.Popen(
            [*RATCHET, "server", "--port", str(free_port()), "--headless"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert server.stdout is not None and server.stderr is not None
        banner = server.stdout.readline() + server.stdout.readline()
        if banner:
            break
        server.wait(30)
        error = server.stderr.read()
        assert "in use" in error, error
    assert "(headless)" in banner and "Press Ctrl-C to stop" in banner, banner
    log = Path(banner.split("log: ", 1)[1].split(". Press", 1)[0])
    (child,) = server_children(server.pid)
    return server, child, log.parent


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_server_stops_with_its_dev_server_on_ctrl_c_and_sigterm(stop: signal.Signals):
    server, child, log_dir = start_server_command()
    server.send_signal(stop)  # swallowed by its wait loop before
    assert server.wait(30) == 0
    assert gone(child) and not log_dir.exists()


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG")
def test_a_killed_server_command_takes_its_dev_server_along():
    server, child, log_dir = start_server_command()
    server.kill()  # orphaned the `temporal` child before
    server.wait()
    assert wait_until(lambda: gone(child)), f"dev server {child} outlived its parent"
    assert log_dir.exists()  # nothing can run in a SIGKILLed process; the next start sweeps it
    again, again_child, _ = start_server_command()
    again.terminate()
    assert again.wait(30) == 0 and gone(again_child)
    assert not log_dir.exists()


@pytest.mark.slow
def test_a_port_taken_before_the_server_binds_it_is_chosen_again(tmp_path: Path, monkeypatch):
    # On a shared machine another process can take a free port first (CI saw it).
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        offered = iter([taken])
        monkeypatch.setattr(devserver, "free_port", lambda: next(offered, None) or free_port())
        server = DevServer.start(ui=False, log_dir=tmp_path)
        try:
            assert server.port != taken
            assert "address already in use" in server.log_path.read_text()
            with socket.create_connection(("127.0.0.1", server.port), timeout=5):
                pass
        finally:
            server.stop()
