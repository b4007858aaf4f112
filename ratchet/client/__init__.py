"""The client: start, watch and steer runs and sessions; read their state and history.

Besides the handles, this package exports the host-side views the handles
return: a run's ``AgentState`` (status, turns, the thread), committed state
(``StateExport``), pending work and decisions, and the events ``events()``
yields (``RunEvent``: one class per kind, each with typed ``data``).
"""

from ratchet.agents._engine import AgentStateExport, StateExport
from ratchet.types import (
    AgentSession,
    AgentState,
    AgentStatus,
    ClientTool,
    CustomEvent,
    Decision,
    EventBase,
    ExecutionState,
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
from ._client import AgentClient
from ._deletion import SessionDeletion
from ._run_handle import RunHandle
from ._schedules import schedule_runs_query
from ._session_handle import SessionHandle
from ._turn_records import TurnRecord

__all__ = [
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
    "new_request_id",
    "schedule_runs_query",
]
