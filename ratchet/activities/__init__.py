"""Activities: where agents and tools run (and do their I/O)."""

from ratchet.wire.names import TURN_ACTIVITY
from ratchet.wire.turn_data import TurnInput, TurnOutput

from .turn import AgentFactory, TurnActivities

__all__ = ["TURN_ACTIVITY", "AgentFactory", "TurnActivities", "TurnInput", "TurnOutput"]
