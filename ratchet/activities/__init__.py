"""Activities: where agents and tools run (and do their I/O). Internal: workers get
them from ``ratchet.plugin.RatchetPlugin`` (``build_worker`` adds it).

Public for the worker's options: ``AgentFactory`` (what ``agents=`` maps a name
to), ``ResourceFactory`` (``resources=``), the per-worker caches ``ThreadCache`` and
``StateCache``, and ``DEFAULT_BATCH_INTERVAL`` (``live_events=``'s default)."""

from ._event_publisher import DEFAULT_BATCH_INTERVAL
from ._log_cache import ThreadCache
from ._resources import ResourceFactory
from ._state_refs import StateCache
from ._turn import AgentFactory, TurnActivities

__all__ = [
    "DEFAULT_BATCH_INTERVAL",
    "AgentFactory",
    "ResourceFactory",
    "StateCache",
    "ThreadCache",
    "TurnActivities",
]
