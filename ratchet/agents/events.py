"""Events a run sends to whoever watches it live.

A turn sends its own (``context.emit``, streamed text) while it works, one
signal per batch; the workflow sends the rest (status and what the run waits
for, turns started and completed, their tool calls and results, committed
state changes) exactly once, from what its history holds anyway. Every event names
its run, turn and, for events sent by a turn, the attempt: a retried turn sends
``retry`` before anything else, so a viewer drops what the failed attempt showed.
"""

from __future__ import annotations

from typing import Any, Literal

from .compact import CompactModel

EventKind = Literal[
    # sent by the workflow, exactly once
    "run_started",
    "status",
    "turn_started",
    "turn_completed",
    "tool_call",
    "tool_result",
    "state_changed",
    "run_finished",
    # sent by the turn while it works (attempt > 0)
    "retry",
    "text_delta",
    "custom",
]


class RunEvent(CompactModel):
    kind: EventKind
    run_id: str = ""
    """The workflow id of the run the event belongs to."""
    agent: str = ""
    turn: int = 0
    attempt: int = 0
    """For events a turn sent: its attempt (0: sent by the workflow)."""
    seq: int = 0
    """For events a turn sent: their order within the attempt, from 1."""
    text: str | None = None
    data: Any = None


def as_event(value: Any) -> RunEvent:
    """A ``RunEvent`` as given, or any JSON-able value wrapped as a ``custom`` event."""
    return value if isinstance(value, RunEvent) else RunEvent(kind="custom", data=value)
