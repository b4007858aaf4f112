"""The pure parts of throttling and per-key metrics: what counts as a throttle, how
a turn counts its real failures and its time throttled, and how ``ratchet fleet
status --metrics`` sums the workers' histograms per fairness key."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from ratchet.activities._throttling import imposed, real_failures, throttle_of, throttled_for
from ratchet.cli._fleet import status_lines
from ratchet.cli._fleet_metrics import KeyFigures, figures_of, key_lines, metrics_url
from ratchet.cli._fleet_queue import QueueReport
from ratchet.errors import ModelError

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (ModelError("slow", retryable=True, status=429, retry_after=2), "429, retry-after 2s"),
        (ModelError("busy", retryable=True, status=529, retry_after=0.5), "529, retry-after 0.5s"),
        (ModelError("busy", retryable=True, status=529), "529"),
        (ModelError("oops", retryable=True, status=500, retry_after=1), None),
        (ModelError("quota gone", retryable=False, status=429), None),
        (RuntimeError("429"), None),
    ],
)
def test_only_a_retryable_429_or_529_is_a_throttle(error: BaseException, said: str | None):
    assert throttle_of(error) == said


def test_real_failures_are_the_attempts_before_minus_the_throttled_ones():
    earlier = [{"attempt": 1, "throttled": "429"}, {"attempt": 2, "failure": "500"}]
    earlier += [{"attempt": 4, "throttled": "429"}]  # attempt 3 was lost with its worker
    assert real_failures(5, earlier) == 2


def test_time_throttled_is_what_the_provider_imposed_not_the_queues_wait():
    earlier = [
        {"attempt": 1, "throttled": "429, retry-after 0.8s", "throttled_s": 0.9},
        {"attempt": 2, "failure": "500"},  # a failure: not counted
        {"attempt": 3, "throttled": "429"},  # recorded by an older worker: 1s
    ]
    assert throttled_for(earlier) == pytest.approx(1.9)
    slow = ModelError("slow", retryable=True, status=429, retry_after=0.8)
    assert imposed(slow, T0, T0 + timedelta(seconds=0.2)) == pytest.approx(1.0)
    unsaid = ModelError("busy", retryable=True, status=529)
    assert imposed(unsaid, T0, T0 + timedelta(seconds=0.5)) == pytest.approx(1.5)


def test_p95_is_interpolated_within_its_bucket_and_past_the_last_bound_is_infinite():
    figures = KeyFigures(started=100, buckets={0.1: 50, 1.0: 90, 10.0: 100, math.inf: 100})
    assert figures.quantile(0.95) == pytest.approx(1.0 + 9.0 * 0.5)
    assert figures.quantile(0.5) == pytest.approx(0.1)
    late = KeyFigures(started=10, buckets={1.0: 1, math.inf: 10})
    assert math.isinf(late.quantile(0.95))
    assert "p95 over 1s" in key_lines({"k": late})[1]


def test_figures_are_summed_per_key_over_workers_agents_and_only_for_the_queue():
    def worker(agent: str, queue: str = "q") -> str:
        labels = f'agent="{agent}",fairness_key="acme",task_queue="{queue}"'
        return "\n".join(
            [
                "# TYPE ratchet_turn_schedule_to_start histogram",
                f'ratchet_turn_schedule_to_start_bucket{{{labels},le="1"}} 3',
                f'ratchet_turn_schedule_to_start_bucket{{{labels},le="+Inf"}} 4',
                f"ratchet_turn_schedule_to_start_sum{{{labels}}} 6.0",
                f"ratchet_turn_schedule_to_start_count{{{labels}}} 4",
                f"ratchet_turn_throttles{{{labels}}} 2",
                f"ratchet_turns{{{labels}}} 99",
            ]
        )

    figures = figures_of([worker("a"), worker("b"), worker("a", queue="other")], "q")
    assert list(figures) == ["acme"]
    acme = figures["acme"]
    assert (acme.started, acme.wait_seconds, acme.throttles) == (8, 12.0, 4)
    assert acme.buckets == {1.0: 6, math.inf: 8}
    assert key_lines(figures)[1] == (
        "    acme: 8 started; wait mean 1.50s, p95 over 1s; throttled 4"
    )


@pytest.mark.parametrize(
    ("given", "url"),
    [
        ("worker-1:9464", "http://worker-1:9464/metrics"),
        ("http://worker-1:9464", "http://worker-1:9464/metrics"),
        ("https://w/custom/path", "https://w/custom/path"),
    ],
)
def test_a_metrics_address_becomes_its_endpoint(given: str, url: str):
    assert metrics_url(given) == url


def test_status_says_no_turn_is_held_back_without_a_backlog_whatever_the_server_flags():
    def held(backlog: int, limiting: bool, dispatching: float = 1.0) -> str:
        report = QueueReport(
            limit=1.0, reason="", effective=1.0, source="api", backlog=backlog,
            backlog_age=0.0, add_rate=0.0, dispatch_rate=dispatching, limiting=limiting,
            pollers=1,
        )  # fmt: skip
        (line,) = [x for x in status_lines("q", report) if "held back" in x]
        return line.rpartition(": ")[2]

    assert held(0, limiting=True) == "no (no backlog)"  # a minute after the load ended
    assert held(5, limiting=True) == "yes"
    assert held(5, limiting=False) == "no"
    # The workers stopped with turns waiting: the flag lingers, the limit holds none.
    assert held(5, limiting=True, dispatching=0.0).startswith("no (nothing dispatched")
