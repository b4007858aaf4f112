"""The dev server's own metering of billed actions: the ``action`` metric by
``action_type`` on its ``--metrics-port`` (as bench/actions.py reads it)."""

from __future__ import annotations

import asyncio
import re
import urllib.request
from collections import Counter

LINE = re.compile(r'^action\{action_type="([^"]+)",namespace="default"[^}]*\} (\S+)$')


def metered(port: int) -> Counter[str]:
    """Actions the server has metered so far, by type."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    counts: Counter[str] = Counter()
    for line in text.splitlines():
        if match := LINE.match(line):
            counts[match[1]] += int(float(match[2]))
    return counts


def heartbeats(counts: Counter[str]) -> int:
    return sum(n for kind, n in counts.items() if "heartbeat" in kind.lower())


async def settled(port: int) -> Counter[str]:
    """The counts once they stop moving (the server reports them each second)."""
    last = metered(port)
    while True:
        await asyncio.sleep(1.5)
        if (now := metered(port)) == last:
            return now
        last = now
