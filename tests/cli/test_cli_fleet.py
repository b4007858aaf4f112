"""``ratchet fleet``: a turn queue's rate limit, set on the server, holds across two
worker processes; ``status`` shows it and the queue's statistics, and per fairness
key what the workers' metrics say."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest

from ratchet.cli import main
from ratchet.client import AgentClient
from ratchet.devserver import DevServer, free_port
from ratchet.wire import RunOptions

from ..logged_agents import EventLog

RPS = 3.0
RUNS = 15


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
    out = ratchet(capsys, "fleet", "status", "--task-queue", task_queue)[1]
    assert "rate limit: none set; enforced:" in out and "(from api)" not in out, out


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
