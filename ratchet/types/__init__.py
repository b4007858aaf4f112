"""The types every layer speaks: Temporal-free data, defined here once.

- Messages and their parts: ``Message``, ``ToolCall``, ``ImagePart``, ``FilePart``.
- What a run costs: ``Usage``.
- Events a run emits, one class per kind (``RunEvent`` is their union).
- Pending work and decisions: ``PendingAction``, ``PendingView``, ``Decision``.
- Status and records: ``AgentStatus``, a run's ``AgentRecord`` and a session's
  ``AgentSession``, ``ExecutionRecord`` (one run's progress), ``ThreadData``.
- The log and its view: ``Span``, ``View`` (functions in ``ratchet.types.views``).
- State values: ``StateEntry``, ``StateChange``, ``StateConflict``, ``StateChanged``,
  ``ShareToken``; a session's approval rules: ``ApprovalRules``, ``RuleChange``.
- Helpers the engine and hosts share (ids, sizes, excerpts) and ``SparseModel``, the
  base of every model here (it leaves defaults out of payloads).

``ratchet.agents`` holds what an agent author writes with; ``ratchet.client`` re-exports
the host views it returns (``AgentRecord``, the events, ...). Nothing here imports
Temporal.
"""

import warnings
from typing import Any

from ._approval_rules import ApprovalRules, RuleChange, Verdict, rule_change
from ._client_tools import ClientTool, tool_problems
from ._events import (
    ARGUMENTS_LIMIT,
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
    as_event,
    excerpt,
    tool_answered,
    tool_called,
)
from ._messages import (
    Message,
    Role,
    ToolCall,
    approximate_size,
    id_tag,
    new_id,
    reply_id,
    result_id,
)
from ._parts import PART_LIMIT, FilePart, ImagePart, Part, data_url
from ._parts import describe as describe_part
from ._parts import size as part_size
from ._pending import Decision, PendingAction, PendingKind, PendingView, question_id, question_of
from ._records import (
    DECISIONS_KEPT,
    MAX_STEP_RESULTS,
    AgentRecord,
    AgentSession,
    ExecutionRecord,
    Gap,
    PromptSize,
    SessionInfo,
    StepResult,
    ThreadBase,
    ThreadData,
)
from ._spans import Span, View, whole_log
from ._sparse import SparseModel, decoding, is_decoding, type_adapter
from ._state_values import (
    SharedEntry,
    ShareToken,
    StateChange,
    StateChanged,
    StateConflict,
    StateEntry,
)
from ._status import AgentStatus
from ._usage import Usage

__all__ = [
    "ARGUMENTS_LIMIT",
    "AgentSession",
    "AgentRecord",
    "AgentStatus",
    "ApprovalRules",
    "ClientTool",
    "CustomEvent",
    "DECISIONS_KEPT",
    "Decision",
    "EventBase",
    "ExecutionRecord",
    "FilePart",
    "Gap",
    "ImagePart",
    "MAX_STEP_RESULTS",
    "Message",
    "Part",
    "PART_LIMIT",
    "PendingAction",
    "PendingKind",
    "PendingView",
    "PromptSize",
    "Retry",
    "Role",
    "RuleChange",
    "RunEvent",
    "RunFinished",
    "RunFinishedData",
    "RunStarted",
    "RunStartedData",
    "SessionInfo",
    "ShareToken",
    "SharedEntry",
    "Span",
    "SparseModel",
    "StateChange",
    "StateChanged",
    "StateChangedData",
    "StateChangedEvent",
    "StateConflict",
    "StateEntry",
    "StatusChanged",
    "StatusData",
    "StepResult",
    "TextDelta",
    "ThreadBase",
    "ThreadData",
    "ToolCall",
    "ToolCallData",
    "ToolCalled",
    "ToolResult",
    "ToolResultData",
    "TurnCompleted",
    "TurnCompletedData",
    "TurnStarted",
    "Usage",
    "Verdict",
    "View",
    "approximate_size",
    "as_event",
    "data_url",
    "decoding",
    "describe_part",
    "excerpt",
    "id_tag",
    "is_decoding",
    "new_id",
    "part_size",
    "question_id",
    "question_of",
    "reply_id",
    "result_id",
    "rule_change",
    "tool_answered",
    "tool_called",
    "tool_problems",
    "type_adapter",
    "whole_log",
]


RENAMED = {"AgentState": "AgentRecord", "ExecutionState": "ExecutionRecord"}
"""0.1.0's names, kept until 0.3: "state" is now only the agents' key-value state."""


def __getattr__(name: str) -> Any:
    new = RENAMED.get(name)
    if new is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"ratchet.types.{name} is ratchet.types.{new} since 0.2 (the old name works until 0.3).",
        DeprecationWarning,
        stacklevel=2,
    )
    return globals()[new]
