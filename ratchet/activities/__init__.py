"""Activities: where agents and tools run (and do their I/O). Workers get
them from ``ratchet.plugin.RatchetPlugin`` (``build_worker`` adds it).

Public for the worker's options: ``AgentFactory`` (what ``agents=`` maps a name
to), ``ResourceFactory`` (``resources=``), the per-worker caches ``ThreadCache`` and
``StateCache``, and ``DEFAULT_BATCH_INTERVAL`` (``live_events=``'s default); and
for ``RatchetPlugin``, the activities it registers (``TurnActivities``,
``AnchorCopies``, ``deliver_scheduled_message``) and the ``WorkerResources`` it opens."""

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
