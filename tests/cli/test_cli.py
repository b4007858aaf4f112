"""The ``ratchet`` command, run as a user would run it."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, TimeoutError
from pathlib import Path
from typing import IO

import pytest

import ratchet as ratchet_package
import ratchet.cli as cli
from ratchet import devserver
from ratchet.cli import build_parser
from ratchet.cli._waiting import poller_note
from ratchet.client import AgentClient
from ratchet.devserver import DevServer, free_port, temporal_binary
from ratchet.testing import ChildProcess
from tests.chaos import as_from_a_terminal, signal_state

from ..conftest import ROOT, release
from ..logged_agents import AGENTS

RATCHET = [sys.executable, "-m", "ratchet.cli"]


def ratchet(
    *args: str, server: DevServer | None = None, timeout: float = 120, tmp: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    if tmp is not None:
        env["TMPDIR"] = str(tmp)
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
def test_demo_kills_a_worker_and_the_run_resumes(tmp_path: Path):
    done = ratchet("demo", timeout=300, tmp=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert list(tmp_path.iterdir()) == []  # its server's log went with it
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
    assert "registered: " + ", ".join(sorted(AGENTS)) in done.stderr


def test_an_empty_or_unknown_id_is_refused_with_what_to_do(temporal_server: DevServer):
    # Raw Temporal errors before: "WorkflowId is not set on request.", "workflow not
    # found for ID: nosuch"; and `ratchet run "" hi` started a run that could only fail.
    cases = {
        ("sessions", "show", ""): "The run or session id is empty ('')",
        ("sessions", "show", "nosuch"): "No run or session with id 'nosuch' in this namespace",
        ("watch", ""): "The run or session id is empty ('')",
        ("watch", "nosuch"): "No run or session with id 'nosuch' in this namespace",
        ("run", "", "hi"): "The agent's name is empty ('')",
    }
    for args, said in cases.items():
        done = ratchet(*args, server=temporal_server)
        assert done.returncode == 1, (args, done.stderr)
        assert said in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)


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


@pytest.mark.slow  # a child process
def test_worker_with_a_bad_agents_spec_exits_with_a_clear_error():
    done = ratchet("worker", "--agents", "no_such_module:AGENTS")
    assert done.returncode == 2
    assert "Cannot load agents from 'no_such_module:AGENTS'" in done.stderr


def start_run(server: DevServer, task_queue: str) -> tuple[subprocess.Popen[str], str]:
    """``ratchet run steps`` in a child process, and its workflow id."""
    run = subprocess.Popen(
        [*RATCHET, "run", "steps", "do it", "--task-queue", task_queue],
        cwd=ROOT,
        env={**os.environ, "TEMPORAL_ADDRESS": server.address},
        preexec_fn=as_from_a_terminal,  # the test presses Ctrl-C
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert run.stdout is not None
    return run, run.stdout.readline().split()[1]


def next_line(stream: IO[str], timeout: float = 60) -> str:
    """The stream's next line; "" if none comes within ``timeout`` seconds."""
    pool = ThreadPoolExecutor(1)
    try:
        return pool.submit(stream.readline).result(timeout)
    except TimeoutError:
        return ""
    finally:
        pool.shutdown(wait=False)  # a reader still waiting ends when its process does


def stop_run(run: subprocess.Popen[str], workflow_id: str, server: DevServer) -> None:
    run.kill()
    run.communicate()
    subprocess.run(
        [temporal_binary(), "workflow", "terminate", "--workflow-id", workflow_id]
        + ["--address", server.address, "--reason", "test over"],
        capture_output=True,
        check=True,
    )


def test_run_says_when_no_worker_takes_its_task(temporal_server: DevServer, task_queue: str):
    run, workflow_id = start_run(temporal_server, task_queue)
    assert run.stderr is not None
    note = next_line(run.stderr)  # it waited silently for ever before
    stop_run(run, workflow_id, temporal_server)
    assert note.startswith(
        f"note: no worker has taken run {workflow_id}'s task in 5 s (task queue "
        f"'{task_queue}': no worker has polled it lately). It waits until a worker does"
    ), note
    assert f"ratchet worker --agents myapp.agents:AGENTS --task-queue {task_queue}" in note


async def test_run_says_when_the_worker_of_its_task_queue_stopped_a_moment_ago(
    temporal_server: DevServer, client: AgentClient, worker_processes, task_queue: str
):
    worker = worker_processes()
    listed = f"last polled by {worker.pid}@"
    for _ in range(600):  # until the queue lists it (a poll may reach another partition first)
        if listed in await poller_note(client.temporal, task_queue):
            break
        await asyncio.sleep(0.2)
    worker.kill()  # the queue goes on listing it for minutes: the run was silent before
    run, workflow_id = start_run(temporal_server, task_queue)
    assert run.stderr is not None
    note = await asyncio.to_thread(next_line, run.stderr)
    stop_run(run, workflow_id, temporal_server)
    assert note.startswith(
        f"note: no worker has taken run {workflow_id}'s task in 5 s (task queue "
        f"'{task_queue}': {listed}"
    ), note


def test_ctrl_c_leaves_the_run_going_and_says_how_to_follow_it(
    temporal_server: DevServer, worker_processes, task_queue: str, event_log: Path
):
    worker_processes()
    run, workflow_id = start_run(temporal_server, task_queue)
    run.send_signal(signal.SIGINT)
    try:
        _, err = run.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"no exit on Ctrl-C: {signal_state(run.pid)}") from None
    finally:
        run.kill()
    for n in (1, 2, 3):
        release(event_log, workflow_id, n)
    follow = f"ratchet watch {workflow_id}"
    watched = ratchet(*follow.split()[1:], "--task-queue", task_queue, server=temporal_server)
    assert run.returncode == 130
    assert "Traceback" not in err
    assert f"interrupted: run {workflow_id} goes on without this command." in err  # silent before
    assert f"follow it: {follow}" in err
    assert "status COMPLETED" in watched.stdout, watched.stdout + watched.stderr


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
        ["worker", "--agents", "ratchet.examples:AGENTS"],
    ],
)
@pytest.mark.slow  # a child process
def test_without_a_server_a_command_prints_one_line_naming_the_address(command: list[str]):
    address = no_answer_address()
    done = ratchet(*command, "--address", address)
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr  # a 30-line traceback (or exit 134) before
    assert f"no Temporal server answers at {address}" in done.stderr
    assert "`ratchet server`" in done.stderr


@pytest.mark.slow  # a child process and a dev server
def test_a_worker_started_before_its_server_waits_for_it_then_serves(
    tmp_path: Path, task_queue: str
):
    port = free_port()
    not_yet = DevServer(port=port, ui_port=None, log_path=tmp_path / "unused.log")
    argv = [*RATCHET, "worker", "--agents", "ratchet.examples:AGENTS", "--task-queue", task_queue]
    worker = ChildProcess([*argv, "--server-wait", "120"], not_yet)
    try:
        worker.wait_for(f"no Temporal server answers at 127.0.0.1:{port} yet")
        with DevServer.start(port=port, ui=False, log_dir=tmp_path):
            worker.wait_for("worker ready", timeout=120)
            assert worker.count("trying again") == 1, worker.output  # said once, not per try
    finally:
        worker.stop()


def test_a_host_name_that_does_not_resolve_is_named_as_such(capsys: pytest.CaptureFixture[str]):
    # The reason was the SDK's raw tonic text, cut at 200 characters, and the advice
    # was to start a server.
    code = cli.main(["sessions", "list", "--address", "nosuchhost.invalid:7233"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith(
        "error: no Temporal server answers at nosuchhost.invalid:7233 (dns error: "
    )
    assert err.endswith("). Check the host's name in --address / TEMPORAL_ADDRESS.\n")
    assert err.count("\n") == 1 and "tonic" not in err and "`ratchet server`" not in err


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
        banner = "".join(server.stdout.readline() for _ in range(3))  # a port not 7233:
        # the banner's second line is how clients find it
        if banner:
            break
        server.wait(30)
        error = server.stderr.read()
        assert "in use" in error, error
    assert "(headless); fairness on" in banner and "Press Ctrl-C to stop" in banner, banner
    assert "with TEMPORAL_ADDRESS=127.0.0.1:" in banner, banner  # the host it binds
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
    # Nothing can run in a SIGKILLed process: the next start sweeps its log directory
    # (in a parallel run another worker's dev server may start first and sweep it).
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


FAULTY_AGENTS = """
from ratchet.agents import ScriptedModel, ToolCallingAgent, tool


@tool
def explode() -> str:
    '''Always fails.'''
    raise RuntimeError("the disk is full")


def faulty():
    model = ScriptedModel([ScriptedModel.call("explode"), "sorry, it failed"])
    return ToolCallingAgent(model, [explode])


AGENTS = {"faulty": faulty}
"""


@pytest.mark.parametrize("level, logged", [("warning", True), ("error", False)])
def test_a_tool_that_raises_is_logged_on_the_worker_at_its_log_level(
    temporal_server: DevServer, task_queue: str, tmp_path: Path, level: str, logged: bool
):
    (tmp_path / "faulty.py").write_text(FAULTY_AGENTS)
    argv = [*RATCHET, "worker", "--agents", "faulty:AGENTS", "--task-queue", task_queue]
    worker = ChildProcess([*argv, "--log-level", level], temporal_server, cwd=tmp_path)
    try:
        worker.wait_for("worker ready")
        done = ratchet("run", "faulty", "go", "--task-queue", task_queue, server=temporal_server)
    finally:
        worker.stop()
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("sorry, it failed")  # the model read the error
    # Nothing reached the worker's log before, and there was no --log-level.
    line = "WARNING ratchet.agents._tools: Tool 'explode' (call "
    assert (line in worker.output) is logged, worker.output
    assert ("raised RuntimeError: the disk is full" in worker.output) is logged
    assert ('raise RuntimeError("the disk is full")' in worker.output) is logged  # its traceback


def every_option() -> Iterator[tuple[str, argparse.ArgumentParser, argparse.Action]]:
    def walk(parser: argparse.ArgumentParser, path: str):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, f"{path} {name}")
            elif action.option_strings and not isinstance(action, argparse._HelpAction):
                yield f"{path} {action.option_strings[-1]}", parser, action

    return walk(build_parser(), "ratchet")


def test_every_option_of_every_command_says_what_it_is_and_its_default():
    for name, parser, action in every_option():
        text = parser._get_formatter()._get_help_string(action)  # as --help prints it
        assert text, f"{name} has no help"  # --port, --task-queue, --max-turns... before
        if action.default not in (None, False, [], argparse.SUPPRESS):
            assert "default" in text, f"{name}: its default {action.default!r} is not named"


def test_web_logs_at_the_level_it_is_given(temporal_server: DevServer):
    port = free_port()
    argv = [*RATCHET, "web", "--no-auth", "--port", str(port), "--log-level", "info"]
    web = ChildProcess(argv, temporal_server, cwd=ROOT)  # no --log-level before
    try:
        web.wait_for("ratchet web on")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/agents", timeout=30) as answer:
            assert answer.status == 200
        web.wait_for('"GET /v1/agents HTTP/1.1" 200')  # uvicorn's access log, at INFO
    finally:
        web.stop()


def test_numbers_out_of_range_are_refused_naming_the_flag(capsys: pytest.CaptureFixture[str]):
    # They reached the client before, which named RunOptions, BatchOptions or a
    # parameter ("last must be 0 or more") instead of the flag.
    cases = {
        ("run", "steps", "hi", "--max-turns", "0"): "--max-turns: '0' is not a whole number",
        ("sessions", "show", "s", "--messages", "-1"): "--messages: '-1' is not a whole",
        ("sessions", "fork", "s", "--at-turn", "-1"): "--at-turn: '-1' is not a whole",
        ("eval", "rerun", "s", "--agent", "a", "--concurrency", "51"): "'51' is more than 50",
        ("worker", "--grace-period", "-5"): "--grace-period: '-5' is not a finite number "
        "of seconds >= 0 (e.g. 20; 0 cancels turns at once)",
        ("worker", "--server-wait", "abc"): "--server-wait: 'abc' is not a finite number "
        "of seconds >= 0 (e.g. 30; 0 exits at once when no server answers)",
    }
    for args, said in cases.items():
        with pytest.raises(SystemExit) as exited:
            build_parser().parse_args(list(args))
        assert exited.value.code == 2, args
        assert said in capsys.readouterr().err, args


def test_a_command_whose_task_ends_cancelled_exits_130_through_the_hard_exit(monkeypatch):
    """asyncio.run raises CancelledError, not KeyboardInterrupt, when Ctrl-C lands on a
    task cancelled twice (a timeout in it expiring too); it escaped ``main`` and skipped
    the hard exit, so the interpreter's own exit could hang (seen in a parallel run)."""

    async def cancelled_twice(args: argparse.Namespace) -> int:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        task.cancel()
        await asyncio.sleep(1)
        return 0

    parser = argparse.ArgumentParser()
    parser.set_defaults(func=cancelled_twice)
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    assert cli.main([]) == 130


@pytest.mark.slow
def test_web_refuses_a_namespace_without_the_owner_attributes_naming_ratchet_setup(
    tmp_path: Path,
):
    server = DevServer.start(ui=False, log_dir=tmp_path, search_attributes=False)
    try:
        refused = subprocess.run(
            [*RATCHET, "web", "--port", str(free_port())],
            cwd=ROOT,
            env={**os.environ, "TEMPORAL_ADDRESS": server.address, "RATCHET_WEB_TOKENS": TOKENS},
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
    finally:
        server.stop()
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "AgentOwner" in refused.stderr and "`ratchet setup`" in refused.stderr


TOKENS = "alice:" + "a" * 24


@pytest.mark.slow  # a child process
def test_version_names_the_package_version():
    done = ratchet("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"ratchet {ratchet_package.__version__}"
    with open(ROOT / "pyproject.toml", "rb") as f:
        assert tomllib.load(f)["project"]["version"] == ratchet_package.__version__
