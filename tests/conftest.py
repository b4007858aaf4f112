"""Fixtures: a real Temporal dev server (subprocess, free port), clients, workers."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import NoReturn

import httpx2 as httpx
import pytest

from ratchet.client import AgentClient
from ratchet.devserver import DevServer, free_port
from ratchet.process import hard_exit
from ratchet.testing import ChildProcess, WorkerProcess
from ratchet.worker import build_worker

from .web_agents import AGENTS
from .web_http import ALICE, APP_ORIGIN, BOB, OPS, Web

ROOT = Path(__file__).resolve().parent.parent
_exit_status: list[int] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _exit_status.append(int(exitstatus))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Leave with pytest's own exit code, skipping interpreter finalisation, which
    can abort (exit 134) while Temporal's runtime threads are alive (sdk-python#300)."""
    if _exit_status:
        hard_exit(_exit_status[-1])


SERVER_FIXTURES = {"temporal_server", "client", "agent_client", "worker_processes"}


PRODUCT = {"cli", "web", "evals"}
"""The product lane's folders: the CLI (its deploy and examples commands too), the HTTP
API and the evaluations. Every other test, in a folder or at the top, is the core's."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "fast: in-process, no Temporal server, no child process (pytest -m fast)"
    )
    config.addinivalue_line(
        "markers",
        "slow: starts a Temporal server, a child process (worker, web, CLI, MCP server) "
        "or a build (not fast)",
    )
    config.addinivalue_line(
        "markers",
        "core: the engine's lane: tests/agents, workflows, client, durability, unit and the "
        "code-wide checks at the top (pytest -m core)",
    )
    config.addinivalue_line(
        "markers", "product: the CLI, web and evaluations lane: tests/cli, web, evals (-m product)"
    )


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` (in addopts) runs the fast lane and named tests (``file.py::test``)
    in this process: they are done before xdist's workers would have started."""
    named = bool(config.args) and all("::" in arg for arg in config.args)
    return 0 if named or config.option.markexpr == "fast" else None


@pytest.hookimpl(tryfirst=True)  # before -m deselects and xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test's lane (``core`` or ``product``, by its folder); the fast lane: every
    test that uses no server fixture and is not marked ``slow`` (it starts a server, a
    child process or a build itself); and for ``--dist loadgroup``, one xdist group per
    module whose tests share a module-scoped fixture (a ``ratchet web`` process, a
    worker, a dev server of its own), so it starts once, on one xdist worker."""
    tests = Path(__file__).parent
    for item in items:
        folder = item.path.relative_to(tests).parts[0] if item.path.is_relative_to(tests) else ""
        item.add_marker(pytest.mark.product if folder in PRODUCT else pytest.mark.core)
        needs_server = SERVER_FIXTURES & set(getattr(item, "fixturenames", ()))
        if not needs_server and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.fast)
        if _shares_a_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.path.relative_to(ROOT).as_posix()))


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    scopes = {defs[-1].scope for defs in info.name2fixturedefs.values() if defs}
    return bool(scopes & {"module", "class"})


class _NotInTheFastLane(AssertionError):
    pass


@pytest.fixture(autouse=True)
def _fast_tests_stay_in_process(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test in the fast lane may start no dev server and no child process: checked in
    every run, so the lane stays an in-process unit lane as tests are added."""
    if request.node.get_closest_marker("fast") is None:
        yield
        return

    def refuse(*args: object, **kwargs: object) -> NoReturn:
        raise _NotInTheFastLane(
            "This test starts a Temporal dev server or a child process, so it is not in "
            "the fast lane: mark it @pytest.mark.slow."
        )

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DevServer, "start", refuse)
        patch.setattr(subprocess.Popen, "__init__", refuse)
        yield


@pytest.fixture(scope="session")
def temporal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    server = DevServer.start(ui=False, log_dir=tmp_path_factory.mktemp("temporal"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
async def client(temporal_server: DevServer) -> AgentClient:
    return await AgentClient.connect(temporal_server.address)


@pytest.fixture
def task_queue() -> str:
    return f"test-{uuid.uuid4().hex[:8]}"


@pytest.fixture
async def agent_client(client: AgentClient, task_queue: str) -> AsyncIterator[AgentClient]:
    yield AgentClient(client.temporal, task_queue=task_queue)


@pytest.fixture
def event_log(tmp_path: Path) -> Path:
    """A file test agents append to, so calls made in other processes can be counted."""
    path = tmp_path / "events.log"
    path.touch()
    return path


def release_dir(event_log: Path) -> Path:
    """Where tests drop gate files that let a blocked ``step`` tool finish."""
    path = event_log.parent / "release"
    path.mkdir(exist_ok=True)
    return path


def release(event_log: Path, run_id: str, n: int | str) -> None:
    (release_dir(event_log) / f"{run_id}-{n}").touch()


def worker_process(server: DevServer, task_queue: str, event_log: Path, *extra: str):
    """``python -m ratchet.worker`` with the test agents, for crash tests."""
    env = {
        "RATCHET_TEST_LOG": str(event_log),
        "RATCHET_TEST_RELEASE_DIR": str(release_dir(event_log)),
        "PYTHONPATH": str(ROOT),
    }
    return WorkerProcess(
        server, task_queue, "tests.logged_agents:AGENTS", *extra, env=env, cwd=ROOT
    )


@pytest.fixture
def worker_processes(temporal_server: DevServer, task_queue: str, event_log: Path):
    started: list[WorkerProcess] = []

    def start(*extra: str) -> WorkerProcess:
        worker = worker_process(temporal_server, task_queue, event_log, *extra)
        started.append(worker)
        return worker.wait_ready()

    yield start
    for worker in started:
        worker.stop()


# A ``ratchet web`` process (module-scoped: one per test module that asks), its
# agents' worker, and a client signed in as alice.


@pytest.fixture(scope="module")
def web_queue() -> str:
    return f"web-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def web(temporal_server: DevServer, web_queue: str) -> Iterator[Web]:
    yield from web_process(temporal_server, web_queue)


@pytest.fixture(scope="module")
def web_replica(temporal_server: DevServer, web_queue: str) -> Iterator[Web]:
    """A second ``ratchet web`` in front of the same agents, as behind a load balancer."""
    yield from web_process(temporal_server, web_queue)


def web_process(temporal_server: DevServer, web_queue: str) -> Iterator[Web]:
    port = free_port()
    argv = [sys.executable, "-m", "ratchet.cli", "web", "--port", str(port)]
    argv += ["--agents", "tests.web_agents:AGENTS", "--task-queue", web_queue]
    argv += ["--cors-origin", APP_ORIGIN]
    env = {
        "RATCHET_WEB_TOKENS": f"alice:{ALICE},bob:{BOB},ops:{OPS}",
        "RATCHET_WEB_OPERATORS": "ops",
        "PYTHONPATH": str(ROOT),
    }
    process = ChildProcess(argv, temporal_server, env=env, cwd=ROOT)
    try:
        process.wait_for("ratchet web on")
        yield Web(f"http://127.0.0.1:{port}", process)
    finally:
        process.stop()
        print(process.output)  # shown with a failure: the server's own log


@pytest.fixture(scope="module")
async def worker(client: AgentClient, web_queue: str) -> AsyncIterator[None]:
    async with build_worker(AgentClient(client.temporal, task_queue=web_queue), AGENTS):
        yield


@pytest.fixture
async def alice(web: Web, worker: None) -> AsyncIterator[httpx.AsyncClient]:
    async with web.client() as http:
        yield http
