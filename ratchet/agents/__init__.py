"""The agent-side SDK: plain async Python, no Temporal imports.

Write an agent as a class with ``async def run(messages, thread, context)``;
the engine in ``ratchet.workflows`` runs each call as one durable turn.
"""

from .agent import Agent, Result
from .context import RunContext
from .messages import Message, ToolCall
from .models import (
    ModelClient,
    ModelResponse,
    OpenAIChatModel,
    OpenAIResponsesModel,
    ScriptedModel,
)
from .state import (
    AgentSession,
    AgentState,
    AgentStatus,
    ExecutionState,
    SessionInfo,
    StepResult,
    ThreadData,
)
from .thread import ChatMessageThread, ServiceThread, Thread
from .tool_calling import ToolCallingAgent
from .tools import Tool, tool
from .usage import Usage

__all__ = [
    "Agent",
    "AgentSession",
    "AgentState",
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
    "tool",
]
