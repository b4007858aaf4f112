"""Activities: where agents and tools run (and do their I/O). Workers get them from
``ratchet.plugin.RatchetPlugin`` (``build_worker`` adds it).

For users: the caches a worker keeps, which ``build_worker`` takes
(``ThreadCache``, ``StateCache``), and ``ResourceFactory``. The rest is the worker's
parts, public so that ``ratchet.worker`` and ``ratchet.plugin`` wire them up by name."""

from ._anchor_copies import AnchorCopies
from ._delivery import deliver_scheduled_message
from ._event_publisher import DEFAULT_BATCH_INTERVAL
from ._log_cache import ThreadCache
from ._resources import ResourceFactory, WorkerResources
from ._state_refs import StateCache
from ._turn import AgentFactory, TurnActivities

__all__ = [
    "AgentFactory",
    "AnchorCopies",
    "DEFAULT_BATCH_INTERVAL",
    "deliver_scheduled_message",
    "ResourceFactory",
    "StateCache",
    "ThreadCache",
    "TurnActivities",
    "WorkerResources",
]
