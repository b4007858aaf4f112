"""AgentStatus: where a run is. Its own module so that events can name a status
without importing the run state that holds one."""

from __future__ import annotations

from enum import StrEnum


class AgentStatus(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    AWAITING_APPROVAL = "AWAITING_APPROVAL"
    AWAITING_INPUT = "AWAITING_INPUT"
    AWAITING_CLIENT = "AWAITING_CLIENT"
    """A call of a client tool waits for the result its caller runs it for."""
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    INTERRUPTED = "INTERRUPTED"
    """Stopped at a safe point because a newer message took its place (session steering)."""
