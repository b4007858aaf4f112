"""Per fairness key figures of a turn queue, from the workers' Prometheus endpoints
(``ratchet fleet status --metrics``): turns started, their wait for a worker
(schedule-to-start: backlog, rate limit and fairness) and the provider's throttles."""

from __future__ import annotations

import asyncio
import math
import re
import urllib.error
import urllib.request
from collections import defaultdict
from dataclasses import dataclass, field

from ratchet.errors import ConfigurationError
from ratchet.telemetry import SCHEDULE_TO_START, THROTTLES

SAMPLE = re.compile(r"^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
SCRAPE_TIMEOUT = 10.0
WORKER_SERIES = ("temporal_", "ratchet_")
"""Prefixes of the series a Ratchet worker's metrics endpoint exports (the Temporal
SDK's and Ratchet's own): an endpoint with neither is something else."""


@dataclass
class KeyFigures:
    """One fairness key's turn attempts, summed over agents and workers."""

    started: float = 0.0
    wait_seconds: float = 0.0
    buckets: dict[float, float] = field(default_factory=dict[float, float])
    """Attempts that waited at most ``le`` seconds, by ``le`` (cumulative)."""
    throttles: float = 0.0

    def mean(self) -> float:
        return self.wait_seconds / self.started if self.started else 0.0

    def quantile(self, q: float) -> float:
        """As Prometheus's ``histogram_quantile``: linear within the bucket it falls in
        (``inf`` past the last finite bound)."""
        rank, lower, below = q * self.started, 0.0, 0.0
        for bound in sorted(self.buckets):
            count = self.buckets[bound]
            if count >= rank:
                if math.isinf(bound):
                    return bound
                share = (rank - below) / (count - below) if count > below else 1.0
                return lower + (bound - lower) * share
            lower, below = bound, count
        return 0.0


@dataclass
class Scraped:
    """What the workers' endpoints answered, and why those that did not."""

    texts: list[str]
    unread: list[ConfigurationError]


def metrics_url(text: str) -> str:
    """A worker's metrics endpoint: ``host:port`` gets ``http://`` and ``/metrics``."""
    url = text.strip()
    if "://" not in url:
        url = f"http://{url}"
    scheme, _, rest = url.partition("://")
    return url if "/" in rest else f"{scheme}://{rest}/metrics"


async def scrape(urls: list[str]) -> Scraped:
    """The metrics of the workers at ``urls``, each read at once; an endpoint that
    cannot be read, or is not a worker's, is named in ``unread``."""
    found = await asyncio.gather(
        *(asyncio.to_thread(_fetch, url) for url in urls), return_exceptions=True
    )
    texts = [f for f in found if isinstance(f, str)]
    unread = [f for f in found if isinstance(f, ConfigurationError)]
    for f in found:
        if isinstance(f, BaseException) and not isinstance(f, ConfigurationError):
            raise f
    return Scraped(texts, unread)


def figures_of(texts: list[str], queue: str) -> dict[str, KeyFigures]:
    """Each fairness key's figures on ``queue`` in these Prometheus texts, summed."""
    figures: defaultdict[str, KeyFigures] = defaultdict(KeyFigures)
    for text in texts:
        _add(text, queue, figures)
    return dict(figures)


def key_lines(figures: dict[str, KeyFigures]) -> list[str]:
    """Per key: turn attempts started, their mean and p95 wait, and throttles."""
    if not figures:
        return ["  per fairness key: no turn attempts on this queue in the workers' metrics yet"]
    lines = ["  per fairness key (turn attempts since the workers started):"]
    for key in sorted(figures):
        f = figures[key]
        p95 = f.quantile(0.95)
        last = max((b for b in f.buckets if not math.isinf(b)), default=0.0)
        p95_text = f"over {last:g}s" if math.isinf(p95) else f"{p95:.2f}s"
        lines.append(
            f"    {key or '(none)'}: {f.started:g} started; wait mean {f.mean():.2f}s, "
            f"p95 {p95_text}; throttled {f.throttles:g}"
        )
    return lines


def _fetch(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT) as response:
            text = response.read().decode(errors="replace")
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        raise ConfigurationError(
            f"Could not read metrics from {url}: {reason}. Give each worker's metrics "
            "endpoint (its --metrics-address, e.g. http://worker-1:9464/metrics)."
        ) from e
    if not any(line.startswith(WORKER_SERIES) for line in text.splitlines()):
        raise ConfigurationError(
            f"{url} is not a worker's metrics endpoint: it answered no Temporal worker "
            "metrics (no temporal_ series, which a worker exports once it polls). Give "
            "each worker's --metrics-address (e.g. http://worker-1:9464/metrics)."
        )
    return text


def _add(text: str, queue: str, figures: defaultdict[str, KeyFigures]) -> None:
    for line in text.splitlines():
        match = SAMPLE.match(line)
        if match is None or line.startswith("#"):
            continue
        name, labels, value = match.group(1), dict(LABEL.findall(match.group(2) or "")), match[3]
        if labels.get("task_queue") != queue or "fairness_key" not in labels:
            continue
        f = figures[labels["fairness_key"]]
        if name == f"{SCHEDULE_TO_START}_count":
            f.started += float(value)
        elif name == f"{SCHEDULE_TO_START}_sum":
            f.wait_seconds += float(value)
        elif name == f"{SCHEDULE_TO_START}_bucket":
            bound = float(labels.get("le", "+Inf"))
            f.buckets[bound] = f.buckets.get(bound, 0.0) + float(value)
        elif name == THROTTLES:
            f.throttles += float(value)
