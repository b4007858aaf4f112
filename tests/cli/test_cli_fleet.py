"""``ratchet fleet``: a turn queue's rate limit, set on the server, holds across two
worker processes; ``status`` shows it and the queue's statistics."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ratchet.cli import main
from ratchet.client import AgentClient
from ratchet.devserver import DevServer

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
