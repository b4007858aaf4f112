"""The agent-side SDK: plain async Python, no Temporal imports.

Write an agent as a class with ``async def run(messages, thread, context)``, or
use ``ToolCallingAgent`` with a model client and ``@tool`` functions; the engine
runs each call as one durable turn. What a host reads about a run (its state,
status, pending work) is in ``ratchet.client``.
"""

from typing import TYPE_CHECKING, Any

from ._agent import Agent, Result
from ._approvals import ApprovalPolicy, Rule, allow, ask, deny
from ._compaction import (
    Compaction,
    CompactionPolicy,
    DropToolResults,
    KeepLastTurns,
    Summarize,
)
from ._context import RunContext
from ._events import CustomEvent, RunEvent, TextDelta
from ._fit_window import FitWindow
from ._interceptors import PROCEED, Intercepted, ToolInterceptor
from ._messages import Message, ToolCall
from ._parts import FilePart, ImagePart
from ._pending import PendingAction
from ._pricing import ModelPrice
from ._serializers import JSONSerializer, PickleSerializer, StateSerializer, state_schema
from ._state import PromptSize
from ._state_context import ShareToken, StateChange, StateContext
from ._thread import ChatMessageThread, ServiceThread, Thread
from ._tool_calling import ToolCallingAgent
from ._tools import Tool, Toolset, agent_tool, ask_user, tool
from ._usage import Usage
from .models import ModelClient, ModelResponse, ScriptedModel

if TYPE_CHECKING:
    from .models import OpenAIChatModel, OpenAIResponsesModel

__all__ = [
    "Agent",
    "ApprovalPolicy",
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
    "PROCEED",
    "PendingAction",
    "PickleSerializer",
    "PromptSize",
    "Result",
    "Rule",
    "RunContext",
    "RunEvent",
    "ScriptedModel",
    "ServiceThread",
    "ShareToken",
    "StateChange",
    "StateContext",
    "StateSerializer",
    "Summarize",
    "TextDelta",
    "Thread",
    "Tool",
    "ToolCall",
    "ToolCallingAgent",
    "ToolInterceptor",
    "Toolset",
    "Usage",
    "agent_tool",
    "allow",
    "ask",
    "ask_user",
    "deny",
    "state_schema",
    "tool",
]


def __getattr__(name: str) -> Any:
    # The OpenAI clients load with the ``openai`` SDK on first use (ratchet.agents.models).
    if name in ("OpenAIChatModel", "OpenAIResponsesModel"):
        from . import models

        return getattr(models, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
