"""What a workflow recorded, read from outside it: a thread log's pages (by query, or
from a closed run's history), and a run's turns and tool results from its events
across continue-as-new. The client, the turn activities and the evaluations share
these readers; none of them runs inside a workflow."""

from ._anchors import anchor_results, namespace_retention
from ._run_records import (
    ClosedRun,
    HeldEvents,
    checkpoint_answer,
    closed_run,
    closed_run_of,
    first_turn,
    held_events,
)

__all__ = [
    "ClosedRun",
    "anchor_results",
    "HeldEvents",
    "checkpoint_answer",
    "closed_run",
    "closed_run_of",
    "first_turn",
    "held_events",
    "namespace_retention",
]
