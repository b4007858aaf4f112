"""``ratchet fleet``: a turn queue's rate limit, set on the server, holds across two
worker processes; ``status`` shows it and the queue's statistics, and per fairness
key what the workers' metrics say."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from temporalio.client import Client

from ratchet.cli import main
from ratchet.cli._fleet_queue import describe
from ratchet.client import AgentClient
from ratchet.devserver import DevServer, free_port
from ratchet.wire import RunOptions, fairness_key

from ..logged_agents import EventLog

RPS = 3.0
RUNS = 15


def polled(server: DevServer, queue: str) -> None:
    """Until the server lists a poller of the turn queue: a worker process says it is
    ready before its first poll reaches the server."""

    async def wait() -> None:
        client = await Client.connect(server.address)
        deadline = time.monotonic() + 30
        while not (await describe(client, queue)).pollers:
            assert time.monotonic() < deadline, f"no worker polled {queue!r}"
            await asyncio.sleep(0.1)

    asyncio.run(wait())


def ratchet(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_limit_set_by_ratchet_fleet_holds_across_two_worker_processes(
    temporal_server: DevServer,
    agent_client: AgentClient,
    task_queue: str,
    event_log: Path,
    worker_processes,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv("TEMPORAL_ADDRESS", temporal_server.address)
    code, out, err = ratchet(capsys, "fleet", "limit", "--task-queue", task_queue, "--rps", "3")
    assert code == 0, err
    assert "at most 3 turn dispatches per second" in out
    for _ in range(2):
        worker_processes("--rate-limited")

    async def runs() -> None:
        handles = [await agent_client.start_run("quick", f"q{n}") for n in range(RUNS)]
        await asyncio.gather(*(h.result() for h in handles))

    asyncio.run(runs())
    calls = [e for e in EventLog(event_log).read() if e["kind"] == "model"]
    starts = sorted(e["time"] for e in calls)
    assert len(starts) == RUNS
    assert len({e["pid"] for e in calls}) == 2  # both processes took turns
    # The server's bucket lets a burst of about one second's worth through at once;
    # after it, turns start no faster than the limit, whichever process takes them.
    burst = int(RPS)
    steady = (RUNS - 1 - burst) / (starts[-1] - starts[burst])
    assert steady <= RPS * 1.15, (steady, [round(t - starts[0], 2) for t in starts])

    code, out, err = ratchet(capsys, "fleet", "status", "--task-queue", task_queue)
    assert code == 0, err
    assert "rate limit: 3/s; enforced: 3/s (from api)" in out, out
    assert "fairness: not reported by the server" in out
    assert "rate limit of each fairness key: none set" in out
    assert ratchet(capsys, "fleet", "limit", "--task-queue", task_queue, "--unset")[0] == 0
    # A describe right after the change may still answer with the old limit (seen once
    # in CI): read until it answers with the new one.
    deadline = time.monotonic() + 30
    status = ["fleet", "status", "--task-queue", task_queue]
    while "(from api)" in (out := ratchet(capsys, *status)[1]):
        assert time.monotonic() < deadline, out
        time.sleep(0.2)
    assert "rate limit: none set; enforced:" in out, out


def test_fleet_limit_refuses_a_rate_that_is_not_positive(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit):
        main(["fleet", "limit", "--task-queue", "q", "--rps", "0"])
    assert "'0' is not a rate: give dispatches per second above 0" in capsys.readouterr().err


def test_fleet_weight_refuses_a_weight_temporal_would_not_take(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit):
        main(["fleet", "weight", "--task-queue", "q", "--key", "acme", "--weight", "5000"])
    assert "'5000' is not a weight: give a number from 0.001 to 1000" in capsys.readouterr().err


def test_fleet_status_shows_each_fairness_keys_turns_wait_and_throttles_from_worker_metrics(
    temporal_server: DevServer,
    agent_client: AgentClient,
    task_queue: str,
    worker_processes,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv("TEMPORAL_ADDRESS", temporal_server.address)
    address = f"127.0.0.1:{free_port()}"
    worker_processes("--metrics-address", address)

    async def runs() -> None:
        acme, globex = RunOptions(fairness_key="acme"), RunOptions(fairness_key="globex")
        handles = [await agent_client.start_run("quick", "q", options=acme) for _ in range(3)]
        handles += [
            await agent_client.start_run("throttled", "q", options=globex) for _ in range(2)
        ]
        await asyncio.gather(*(h.result() for h in handles))

    asyncio.run(runs())
    status = ["fleet", "status", "--task-queue", task_queue, "--metrics", address]
    deadline = time.monotonic() + 30  # the runtime publishes what a turn recorded soon after
    while True:
        code, out, err = ratchet(capsys, *status)
        assert code == 0, err
        if "globex: 4 started" in out or time.monotonic() > deadline:
            break
    assert re.search(r"acme: 3 started; wait mean \d+\.\d\ds, p95 \d+\.\d\ds; throttled 0", out), (
        out
    )
    # Each throttled turn started twice: once throttled (429), once answered.
    assert re.search(r"globex: 4 started; .*; throttled 2", out), out


def test_fleet_status_says_which_metrics_endpoint_it_could_not_read(
    temporal_server: DevServer,
    task_queue: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv("TEMPORAL_ADDRESS", temporal_server.address)
    url = f"http://127.0.0.1:{free_port()}/metrics"
    code, out, err = ratchet(
        capsys, "fleet", "status", "--task-queue", task_queue, "--metrics", url
    )
    assert code != 0
    assert f"Could not read metrics from {url}" in err
    assert "--metrics-address" in err


class NotMetrics(BaseHTTPRequestHandler):
    """An endpoint that answers, but not with a worker's metrics (a UI, say)."""

    def do_GET(self) -> None:
        body = b"<html><title>Temporal</title></html>"
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def not_metrics() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), NotMetrics)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/metrics"
    server.shutdown()
    server.server_close()


def test_fleet_status_shows_what_answered_and_names_each_endpoint_that_did_not(
    temporal_server: DevServer,
    task_queue: str,
    worker_processes,
    not_metrics: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv("TEMPORAL_ADDRESS", temporal_server.address)
    address = f"127.0.0.1:{free_port()}"
    worker_processes("--metrics-address", address)
    polled(temporal_server, task_queue)
    down = f"http://127.0.0.1:{free_port()}/metrics"
    urls = ",".join([address, down, not_metrics])
    code, out, err = ratchet(
        capsys, "fleet", "status", "--task-queue", task_queue, "--metrics", urls
    )
    assert code == 0, err
    assert f"turn queue {task_queue!r} (activity tasks): 1 worker(s) polled it lately" in out
    assert "per fairness key: no turn attempts on this queue" in out
    assert f"warning: Could not read metrics from {down}" in err
    assert f"warning: {not_metrics} is not a worker's metrics endpoint" in err
    assert "no temporal_ series" in err

    code, out, err = ratchet(
        capsys, "fleet", "status", "--task-queue", task_queue, "--metrics", not_metrics
    )
    assert code == 1
    assert f"turn queue {task_queue!r}" in out  # the server's section still
    assert "error: No metrics endpoint answered" in err


def test_fleet_status_refuses_an_empty_list_of_metrics_endpoints(
    capsys: pytest.CaptureFixture[str],
):
    with pytest.raises(SystemExit):
        main(["fleet", "status", "--task-queue", "q", "--metrics", ","])
    assert "',' names no endpoint" in capsys.readouterr().err


@pytest.mark.parametrize(
    "command",
    [
        ["fleet", "limit", "--rps", "2"],
        ["fleet", "weight", "--key", "k", "--unset"],
        ["worker", "--agents", "tests.logged_agents:AGENTS"],
        ["run", "quick", "hi"],
    ],
)
def test_an_empty_task_queue_is_refused(command: list[str], capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit):
        main([*command, "--task-queue", " "])
    assert "--task-queue: ' ' is empty: give a task queue's name" in capsys.readouterr().err


def test_fleet_weight_stores_a_long_key_as_turns_shorten_it_and_warns_of_no_workers(
    temporal_server: DevServer,
    task_queue: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv("TEMPORAL_ADDRESS", temporal_server.address)
    owner = "owner-" + "x" * 94
    weight = ["fleet", "weight", "--task-queue", task_queue, "--key", owner, "--weight", "3"]
    code, out, err = ratchet(capsys, *weight)
    assert code == 0, err
    stored = fairness_key(owner)
    assert f"is stored as {stored!r}" in out
    assert f"warning: no worker polls turn queue {task_queue!r} (yet)" in err
    out = ratchet(capsys, "fleet", "status", "--task-queue", task_queue)[1]
    assert f"fairness weight overrides: {stored}=3" in out


def test_fleet_limit_warns_when_the_server_enforces_another_rate_and_status_shows_reasons(
    temporal_server: DevServer,
    task_queue: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv("TEMPORAL_ADDRESS", temporal_server.address)
    limit = ["fleet", "limit", "--task-queue", task_queue]
    code, _, err = ratchet(capsys, *limit, "--rps", "1e12")
    assert code == 0, err
    assert re.search(r"warning: the server enforces \S+/s on turn queue .* not the 1e\+12/s", err)
    code, _, err = ratchet(capsys, *limit, "--rps", "0.7")  # float32 at the server: 0.69999..
    assert code == 0 and "enforces" not in err, err
    code, _, err = ratchet(capsys, *limit, "--per-key", "--rps", "2", "--reason", "tier 1")
    assert code == 0, err
    out = ratchet(capsys, "fleet", "status", "--task-queue", task_queue)[1]
    assert "rate limit of each fairness key: 2/s (tier 1)" in out, out


def test_fleet_limit_warns_of_a_key_limit_above_the_queues_and_of_a_rate_that_all_but_stops(
    temporal_server: DevServer,
    task_queue: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv("TEMPORAL_ADDRESS", temporal_server.address)
    limit = ["fleet", "limit", "--task-queue", task_queue]
    code, _, err = ratchet(capsys, *limit, "--per-key", "--rps", "1e12")
    assert code == 0, err
    assert re.search(r"each key's 1e\+12/s is above what the whole queue gets \(\S+/s", err), err
    code, _, err = ratchet(capsys, *limit, "--per-key", "--rps", "3")
    assert code == 0 and "above" not in err, err
    code, _, err = ratchet(capsys, *limit, "--rps", "1e-9")
    assert code == 0, err
    assert "one turn starts every 277,778 hours" in err, err
