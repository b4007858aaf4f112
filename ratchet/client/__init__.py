"""The client: start, watch and steer runs and sessions; read their state and history.

Besides the handles, this package exports the host-side views the handles
return: a run's ``AgentRecord`` (status, turns, the thread), committed state
(``StateExport``), pending work and decisions, and the events ``events()``
yields (``RunEvent``: one class per kind, each with typed ``data``).
"""

import warnings
from typing import Any

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


RENAMED = {"AgentState": "AgentRecord", "ExecutionState": "ExecutionRecord"}
"""0.1.0's names, kept until 0.3: "state" is now only the agents' key-value state."""


def __getattr__(name: str) -> Any:
    new = RENAMED.get(name)
    if new is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"ratchet.client.{name} is ratchet.client.{new} since 0.2 (the old name works until 0.3).",
        DeprecationWarning,
        stacklevel=2,
    )
    return globals()[new]
