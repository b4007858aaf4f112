"""The agent-side SDK: plain async Python, no Temporal imports.

Write an agent as a class with ``async def run(messages, thread, context)``, or
use ``ToolCallingAgent`` with a model client and ``@tool`` functions; the engine
runs each call as one durable turn. What a host reads about a run (its state,
status, pending work) is in ``ratchet.client``.
"""

from .agent import Agent, Result
from .compaction import (
    Compaction,
    CompactionPolicy,
    DropToolResults,
    KeepLastTurns,
    Summarize,
)
from .context import RunContext
from .events import CustomEvent, RunEvent, TextDelta
from .fit_window import FitWindow
from .interceptors import Intercepted, ToolInterceptor
from .messages import Message, ToolCall
from .models import (
    ModelClient,
    ModelResponse,
    OpenAIChatModel,
    OpenAIResponsesModel,
    ScriptedModel,
)
from .parts import FilePart, ImagePart
from .pending import PendingAction
from .pricing import ModelPrice
from .serializers import JSONSerializer, PickleSerializer, StateSerializer, state_schema
from .state_context import ShareToken, StateContext
from .thread import ChatMessageThread, ServiceThread, Thread
from .tool_calling import ToolCallingAgent
from .tools import Tool, agent_tool, ask_user, tool
from .usage import Usage

__all__ = [
    "Agent",
    "ChatMessageThread",
    "Compaction",
    "CompactionPolicy",
    "CustomEvent",
    "DropToolResults",
    "FilePart",
    "FitWindow",
    "ImagePart",
    "Intercepted",
    "JSONSerializer",
    "KeepLastTurns",
    "Message",
    "ModelClient",
    "ModelPrice",
    "ModelResponse",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "PendingAction",
    "PickleSerializer",
    "Result",
    "RunContext",
    "RunEvent",
    "ScriptedModel",
    "ServiceThread",
    "ShareToken",
    "StateContext",
    "StateSerializer",
    "Summarize",
    "TextDelta",
    "Thread",
    "Tool",
    "ToolCall",
    "ToolCallingAgent",
    "ToolInterceptor",
    "Usage",
    "agent_tool",
    "ask_user",
    "state_schema",
    "tool",
]
