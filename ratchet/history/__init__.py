"""What a workflow recorded, read from outside it: a thread log's pages (by query, or
from a closed run's history), and a run's turns and tool results from its events
across continue-as-new. The client, the turn activities and the evaluations share
these readers; none of them runs inside a workflow.

- ``read_history`` / ``recorded_turns``: a run's (or a session's) completed turns,
  when each was scheduled and done, and a run's result, across continue-as-new;
  ``usage_per_user_message`` splits their usage and latency by user message.
- ``activity_results``: the results of one activity type, through every workflow run.
- ``fetch_range`` / ``Holder``: messages of a thread log, from the run that holds it.
"""

from ._anchors import anchor_results, namespace_retention
from ._log_pages import CacheStats, Holder, fetch_range
from ._log_segments import SegmentCache, closed_segment
from ._recorded import (
    ReadHistory,
    RecordedTurn,
    activity_results,
    read_history,
    recorded_turns,
    usage_per_user_message,
)
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
    "activity_results",
    "anchor_results",
    "CacheStats",
    "checkpoint_answer",
    "closed_run",
    "closed_run_of",
    "closed_segment",
    "ClosedRun",
    "fetch_range",
    "first_turn",
    "held_events",
    "HeldEvents",
    "Holder",
    "namespace_retention",
    "read_history",
    "ReadHistory",
    "recorded_turns",
    "RecordedTurn",
    "SegmentCache",
    "usage_per_user_message",
]
