"""Activities: where agents and tools run (and do their I/O)."""

from .turn import TURN_ACTIVITY, AgentFactory, TurnActivities, TurnInput, TurnOutput

__all__ = ["TURN_ACTIVITY", "AgentFactory", "TurnActivities", "TurnInput", "TurnOutput"]
