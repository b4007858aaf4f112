"""Datasets: recorded conversations exported as a snapshot file.

A session's history lives as long as its namespace's retention; an evaluation
that must outlive it (last quarter's conversations as a regression suite) reruns
a snapshot instead: each source's messages, and what each of its user messages
cost and took, in one JSON file.

    dataset = await export_dataset(client, await find_sources(client, query))
    dataset.write("support-2026-11.json")
    rerun = await start_rerun(client, load_dataset("support-2026-11.json").snapshots,
                              agent="support-v2")
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ValidationError

from ratchet.client import AgentClient
from ratchet.errors import InvalidInputError

from ._report import read_input
from ._rerun import RecordedCase, read_recorded, read_source, split_cases
from ._rerun_types import SourceSnapshot

READERS = 10


class Snapshot(SourceSnapshot):
    """One source's conversation, as it was when exported."""

    def cases(self) -> list[RecordedCase]:
        cases = split_cases(self.source, self.messages)
        for n, case in enumerate(cases):
            case.usage, case.latency_s = self.recorded(n)
        return cases


class Dataset(BaseModel):
    """Snapshots of recorded conversations (``ratchet eval export`` writes one)."""

    exported_at: datetime
    query: str | None = None
    """The visibility query that chose the sources, if one did."""
    snapshots: list[Snapshot]

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(self.model_dump_json(indent=1))
        return path


async def export_dataset(
    client: AgentClient, sources: Sequence[str], *, query: str | None = None
) -> Dataset:
    """Snapshot each source (a session or a run, by id) while its history exists."""
    slots = asyncio.Semaphore(READERS)

    async def snapshot(source: str) -> Snapshot:
        async with slots:
            messages = await read_source(client, source)
            cases = await read_recorded(client, source, messages)
        return Snapshot(
            source=source,
            messages=messages,
            usage=[c.usage for c in cases],
            latency_s=[c.latency_s for c in cases],
        )

    snapshots = await asyncio.gather(*(snapshot(s) for s in dict.fromkeys(sources)))
    return Dataset(exported_at=datetime.now(UTC), query=query, snapshots=list(snapshots))


def load_dataset(path: str | Path) -> Dataset:
    """A dataset file, with an error that says what is wrong with it."""
    text = read_input(path, "dataset file", "written by `ratchet eval export --out`")
    try:
        return Dataset.model_validate_json(text)
    except ValidationError as e:
        raise InvalidInputError(
            f"{path} is not a dataset written by `ratchet eval export`: {e.errors()[0]['msg']} "
            f"at {'.'.join(map(str, e.errors()[0]['loc']))}."
        ) from None
