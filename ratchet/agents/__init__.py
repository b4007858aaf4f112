"""The agent-side SDK: plain async Python, no Temporal imports.

Write an agent as a class with ``async def run(messages, thread, context)``, or
use ``ToolCallingAgent`` with a model client and ``@tool`` functions; the engine
runs each call as one durable turn. The data an agent reads and returns
(``Message``, ``Usage``, events, ...) is in ``ratchet.types``; what a host reads
about a run (its state, status, pending work) is in ``ratchet.client``.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from typing import TYPE_CHECKING, Any

from ._agent import Agent, Result
from ._approvals import ApprovalPolicy, Rule, allow, ask, deny
from ._compaction import (
    Compaction,
    CompactionPolicy,
    DropToolResults,
    KeepLastTurns,
    Summarize,
    SummarizingAgent,
)
from ._context import RunContext
from ._fit_window import FitWindow
from ._interceptors import PROCEED, Intercepted, InterceptorFactory, ToolInterceptor
from ._moved import TO_TYPES
from ._output import FINAL_RESULT
from ._pricing import ModelPrice
from ._serializers import JSONSerializer, PickleSerializer, StateSerializer, state_schema
from ._state_context import StateContext
from ._thread import ChatMessageThread, ServiceThread, Thread
from ._tool_calling import ToolCallingAgent
from ._tools import Tool, Toolset, agent_tool, ask_user, tool
from ._tracing import use_tracer
from .models import ModelClient, ModelResponse, ScriptedModel

if TYPE_CHECKING:
    from .models import AnthropicModel, OpenAIChatModel, OpenAIResponsesModel

__all__ = [
    "Agent",
    "agent_tool",
    "allow",
    "AnthropicModel",
    "ApprovalPolicy",
    "ask",
    "ask_user",
    "ChatMessageThread",
    "Compaction",
    "CompactionPolicy",
    "deny",
    "DropToolResults",
    "FINAL_RESULT",
    "FitWindow",
    "Intercepted",
    "InterceptorFactory",
    "JSONSerializer",
    "KeepLastTurns",
    "ModelClient",
    "ModelPrice",
    "ModelResponse",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "PickleSerializer",
    "PROCEED",
    "Result",
    "Rule",
    "RunContext",
    "ScriptedModel",
    "ServiceThread",
    "state_schema",
    "StateContext",
    "StateSerializer",
    "Summarize",
    "SummarizingAgent",
    "Thread",
    "Tool",
    "tool",
    "ToolCallingAgent",
    "ToolInterceptor",
    "Toolset",
    "use_tracer",
]


MOVED = dict.fromkeys(TO_TYPES, "ratchet.types")
"""Names exported here until 0.2, and where they live now (CHANGELOG: aliases until 0.3)."""

MOVED_MODULES = {
    "_client_tools": "ratchet.types._client_tools",
    "_events": "ratchet.types._events",
    "_messages": "ratchet.types._messages",
    "_parts": "ratchet.types._parts",
    "_pending": "ratchet.types._pending",
    "_spans": "ratchet.types._spans",
    "_sparse": "ratchet.types._sparse",
    "_state": "ratchet.types._records",
    "_status": "ratchet.types._status",
    "_usage": "ratchet.types._usage",
    "_views": "ratchet.types.views",
}
"""Modules moved to ``ratchet.types``: state pickled before 0.2 names its classes by
these paths, so they keep resolving until 0.3."""

for _old, _new in MOVED_MODULES.items():
    sys.modules.setdefault(f"{__name__}.{_old}", importlib.import_module(_new))


def __getattr__(name: str) -> Any:
    # The provider clients load with their SDK on first use (``openai`` alone takes about
    # a second; AnthropicModel needs the anthropic extra): ratchet.agents.models.
    if name in ("AnthropicModel", "OpenAIChatModel", "OpenAIResponsesModel"):
        from . import models

        return getattr(models, name)
    home = MOVED.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"ratchet.agents.{name} moved to {home}.{name}; import it from there "
        "(the old path works until 0.3).",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(home), name)
