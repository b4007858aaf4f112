"""The client: start, watch and steer runs and sessions; read their state and history.

Besides the handles, this package exports the host-side views the handles
return: a run's ``AgentRecord`` (status, turns, the thread), committed state
(``StateExport``), pending work and decisions, and the events ``events()``
yields (``RunEvent``: one class per kind, each with typed ``data``).

Also public, for hosts built on the client (the web server, the CLI):

- ``AgentClient.list_sessions`` lists sessions and runs (``WorkflowSummary`` rows),
  taking further filters escaped (``where={"Owner": subject}``).
- ``numbered_events`` / ``read_events`` read a workflow's events with their
  offsets (``Resent`` drops a batch a turn sent twice); ``handle.events(after=n)``
  resumes a watcher after the last offset it handled.
- ``no_worker_yet`` tells a Temporal error that may pass once a worker polls.
- ``ensure_search_attributes`` registers Ratchet's search attributes on a namespace.
"""

from typing import Any

import ratchet.types
from ratchet.agents._engine import AgentStateExport, StateExport
from ratchet.types import (
    AgentRecord,
    AgentSession,
    AgentStatus,
    ClientTool,
    CustomEvent,
    Decision,
    EventBase,
    ExecutionRecord,
    Gap,
    PendingView,
    Retry,
    RunEvent,
    RunFinished,
    RunFinishedData,
    RunStarted,
    RunStartedData,
    SessionInfo,
    StateChanged,
    StateChangedData,
    StateChangedEvent,
    StateConflict,
    StateEntry,
    StatusChanged,
    StatusData,
    StepResult,
    TextDelta,
    ThreadData,
    ToolCallData,
    ToolCalled,
    ToolResult,
    ToolResultData,
    TurnCompleted,
    TurnCompletedData,
    TurnStarted,
)
from ratchet.wire import Anchored, SessionStatus, new_request_id

from ._checkpoints import Checkpoint
from ._client import DEFAULT_TASK_QUEUE, AgentClient
from ._deletion import SessionDeletion
from ._event_reader import Resent, numbered_events, read_events
from ._listing import WorkflowSummary
from ._namespace_setup import ensure_search_attributes, missing_search_attributes
from ._retries import no_worker_yet
from ._run_handle import RunHandle
from ._schedules import schedule_runs_query
from ._session_handle import SessionHandle
from ._turn_records import TurnRecord

__all__ = [
    "DEFAULT_TASK_QUEUE",
    "AgentClient",
    "AgentSession",
    "Anchored",
    "AgentRecord",
    "AgentStateExport",
    "AgentStatus",
    "Checkpoint",
    "Gap",
    "ClientTool",
    "CustomEvent",
    "Decision",
    "EventBase",
    "ExecutionRecord",
    "Resent",
    "PendingView",
    "Retry",
    "RunEvent",
    "RunFinished",
    "RunFinishedData",
    "RunHandle",
    "RunStarted",
    "RunStartedData",
    "SessionDeletion",
    "SessionHandle",
    "SessionInfo",
    "SessionStatus",
    "StateChanged",
    "StateChangedData",
    "StateChangedEvent",
    "StateConflict",
    "StateEntry",
    "StateExport",
    "StatusChanged",
    "StatusData",
    "StepResult",
    "TextDelta",
    "ThreadData",
    "ToolCallData",
    "ToolCalled",
    "ToolResult",
    "ToolResultData",
    "TurnCompleted",
    "TurnCompletedData",
    "TurnRecord",
    "TurnStarted",
    "WorkflowSummary",
    "ensure_search_attributes",
    "missing_search_attributes",
    "new_request_id",
    "no_worker_yet",
    "numbered_events",
    "read_events",
    "schedule_runs_query",
]


def __getattr__(name: str) -> Any:
    """0.1.0's ``AgentState`` and ``ExecutionState``, with ``ratchet.types``' warning."""
    if name in ("AgentState", "ExecutionState"):
        return getattr(ratchet.types, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
