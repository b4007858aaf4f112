"""The client: start, watch and steer runs and sessions; read their state and history.

Besides the handles, this package exports the host-side views the handles
return: a run's ``AgentState`` (status, turns, the thread), committed state
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

from ratchet.agents._client_tools import ClientTool
from ratchet.agents._events import (
    CustomEvent,
    EventBase,
    Retry,
    RunEvent,
    RunFinished,
    RunFinishedData,
    RunStarted,
    RunStartedData,
    StateChangedData,
    StateChangedEvent,
    StatusChanged,
    StatusData,
    TextDelta,
    ToolCallData,
    ToolCalled,
    ToolResult,
    ToolResultData,
    TurnCompleted,
    TurnCompletedData,
    TurnStarted,
)
from ratchet.agents._pending import Decision, PendingView
from ratchet.agents._state import (
    AgentSession,
    AgentState,
    AgentStatus,
    ExecutionState,
    Gap,
    SessionInfo,
    StepResult,
    ThreadData,
)
from ratchet.agents._state_context import StateChanged, StateConflict, StateEntry
from ratchet.agents._state_export import AgentStateExport, StateExport
from ratchet.wire._anchor_data import Anchored
from ratchet.wire._session_data import SessionStatus, new_request_id

from ._checkpoints import Checkpoint
from ._client import DEFAULT_TASK_QUEUE, AgentClient
from ._deletion import SessionDeletion
from ._event_reader import Resent, numbered_events, read_events
from ._listing import WorkflowSummary
from ._namespace_setup import ensure_search_attributes
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
    "AgentState",
    "AgentStateExport",
    "AgentStatus",
    "Checkpoint",
    "Gap",
    "ClientTool",
    "CustomEvent",
    "Decision",
    "EventBase",
    "ExecutionState",
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
    "new_request_id",
    "no_worker_yet",
    "numbered_events",
    "read_events",
    "schedule_runs_query",
]
