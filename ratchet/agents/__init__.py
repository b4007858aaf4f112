"""The agent-side SDK: plain async Python, no Temporal imports.

Write an agent as a class with ``async def run(messages, thread, context)``;
the engine in ``ratchet.workflows`` runs each call as one durable turn.
"""

from .agent import Agent, Result
from .context import RunContext
from .events import RunEvent
from .messages import Message, ToolCall
from .models import (
    ModelClient,
    ModelResponse,
    OpenAIChatModel,
    OpenAIResponsesModel,
    ScriptedModel,
)
from .pending import Decision, PendingAction, PendingView
from .pricing import ModelPrice
from .serializers import JSONSerializer, PickleSerializer, StateSerializer, state_schema
from .state import (
    AgentSession,
    AgentState,
    AgentStatus,
    ExecutionState,
    SessionInfo,
    StepResult,
    ThreadData,
)
from .state_context import (
    ShareToken,
    StateChanged,
    StateConflict,
    StateContext,
    StateEntry,
)
from .state_export import AgentStateExport, StateExport
from .thread import ChatMessageThread, ServiceThread, Thread
from .tool_calling import ToolCallingAgent
from .tools import Tool, agent_tool, ask_user, tool
from .usage import Usage

__all__ = [
    "Agent",
    "AgentSession",
    "AgentState",
    "AgentStateExport",
    "JSONSerializer",
    "PickleSerializer",
    "ShareToken",
    "StateChanged",
    "StateConflict",
    "StateContext",
    "StateEntry",
    "StateExport",
    "StateSerializer",
    "state_schema",
    "AgentStatus",
    "ChatMessageThread",
    "ExecutionState",
    "Message",
    "ModelClient",
    "ModelResponse",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "Result",
    "RunContext",
    "RunEvent",
    "ScriptedModel",
    "ServiceThread",
    "SessionInfo",
    "StepResult",
    "Thread",
    "ThreadData",
    "Tool",
    "ToolCall",
    "ToolCallingAgent",
    "Usage",
    "ModelPrice",
    "tool",
    "agent_tool",
    "ask_user",
    "Decision",
    "PendingAction",
    "PendingView",
]
