"""Activities: where agents and tools run (and do their I/O)."""

from ratchet.wire._names import TURN_ACTIVITY
from ratchet.wire._turn_data import TurnInput, TurnOutput

from ._turn import AgentFactory, TurnActivities

__all__ = ["TURN_ACTIVITY", "AgentFactory", "TurnActivities", "TurnInput", "TurnOutput"]
