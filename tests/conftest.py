"""Fixtures: a real Temporal dev server (subprocess, free port), clients, workers."""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx2 as httpx
import pytest

from ratchet._exit import hard_exit
from ratchet.client import AgentClient
from ratchet.devserver import DevServer, free_port
from ratchet.testing import ChildProcess, WorkerProcess
from ratchet.worker import build_worker

from .web_agents import AGENTS
from .web_http import ALICE, APP_ORIGIN, BOB, Web

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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "fast: needs no Temporal server (pytest -m fast)")
    config.addinivalue_line(
        "markers", "slow: starts its own Temporal server, worker processes or a build (not fast)"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The fast lane: every test that uses no server fixture and is not marked
    ``slow`` (it starts a server, worker processes or a build itself)."""
    for item in items:
        needs_server = SERVER_FIXTURES & set(getattr(item, "fixturenames", ()))
        if not needs_server and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.fast)


@pytest.fixture(scope="session", autouse=True)
def _fast_lane_starts_no_server(request: pytest.FixtureRequest) -> Iterator[None]:
    """Under ``-m fast`` a test that starts a dev server fails, naming the fix."""
    expression = request.config.option.markexpr or ""
    if "fast" not in expression or "not fast" in expression:
        yield
        return
    original = DevServer.__dict__["start"]  # the classmethod itself

    def refuse(*args: object, **kwargs: object) -> DevServer:
        raise AssertionError(
            "This test starts a Temporal dev server, so it is not in the fast lane: "
            "mark it @pytest.mark.slow."
        )

    DevServer.start = refuse  # type: ignore[method-assign, assignment]
    try:
        yield
    finally:
        DevServer.start = original  # type: ignore[method-assign]


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
    return WorkerProcess(server, task_queue, "tests.agents:AGENTS", *extra, env=env, cwd=ROOT)


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
    env = {"RATCHET_WEB_TOKENS": f"alice:{ALICE},bob:{BOB}", "PYTHONPATH": str(ROOT)}
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
