"""Activities: where agents and tools run (and do their I/O). Internal: workers get
them from ``ratchet.plugin.RatchetPlugin`` (``build_worker`` adds it)."""

from ._turn import AgentFactory, TurnActivities

__all__ = ["AgentFactory", "TurnActivities"]
