"""Re-anchoring a thread: what the workflow asks the worker, and what it answers.

A session's earlier messages live in the histories of its closed workflow runs,
which Temporal deletes once the namespace's retention passes. Before that, the
session copies them into its current run's history (``workflows._anchoring``),
in chunks of at most ``CHUNK_BYTES``: each chunk is the result of one
``ratchet.anchor`` activity, read back by ``history._anchors``.
"""

from __future__ import annotations

from pydantic import Field

from ratchet.types import Gap, Message, SparseModel, ThreadBase

CHUNK_BYTES = 1024 * 1024
"""About the most message bytes one chunk (one activity result) carries."""


class AnchorRequest(SparseModel):
    base: ThreadBase
    """What is copied: the messages ``base`` names, from ``start`` on."""
    thread_id: str
    anchor: int
    """Which copy of this run this chunk belongs to (a run may re-anchor again)."""
    start: int = 0
    max_bytes: int = CHUNK_BYTES


class AnchorChunk(SparseModel):
    anchor: int
    start: int
    messages: list[Message] = Field(default_factory=list[Message])
    """Positions ``start`` on, placeholders where messages are gone (``gaps``)."""
    gaps: list[Gap] = Field(default_factory=list[Gap])
    bytes: int = 0
    """About the JSON size of ``messages``."""

    @property
    def end(self) -> int:
        return self.start + len(self.messages)


class Horizon(SparseModel):
    """How long a thread may rely on a closed run, as the worker reads it."""

    seconds: float
    retention_seconds: float | None = None
    """The namespace's retention (``None``: unlimited, or the horizon was set)."""


class Anchored(SparseModel):
    """What a re-anchoring asked for did (``SessionHandle.reanchor``)."""

    messages: int = 0
    """Messages copied into the open run's history (0: it relied on no closed run)."""
    bytes: int = 0
    gaps: list[Gap] = Field(default_factory=list[Gap])
    """What was gone already (copied as placeholders)."""
    warning: str | None = None
