"""Tool interceptors: the one seam through which a run's tool calls can be answered
without running their tools.

A run names its interceptor in ``RunOptions(tool_interceptor=InterceptorRef(name,
config))``; each worker builds it from the factory registered under that name
(``build_worker(..., tool_interceptors={name: factory})``) with the config, for
every turn and tool activity of the run. ``ToolCallingAgent`` asks it about each
call of a function tool (or of a tool the agent does not have) before the call
runs: the interceptor answers the call, or lets it proceed, and may say whether a
person decides it first. The engine's own calls (sub-agents, handoffs, a typed
final answer) are not intercepted. An evaluation's rerun answers calls from a
recording this way (``ratchet.evals._recording``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ratchet.types import Message, ToolCall

from ._output import FINAL_RESULT

if TYPE_CHECKING:
    from ._context import RunContext
    from ._tools import Tool


@dataclass(frozen=True)
class Intercepted:
    """What an interceptor says of one tool call before it runs."""

    answer: Message | None = None
    """The call's result, given instead of running its tool (``None``: run it)."""
    ask: bool | None = None
    """Whether a person decides the call first (approve or reject), before it runs
    or is given ``answer``. ``None``: as the agent's approval policy says."""


PROCEED = Intercepted()
"""Run the call as the agent would without an interceptor."""


class ToolInterceptor(Protocol):
    """Sees each tool call of a run, with the turn's context, before it runs."""

    def intercept(self, call: ToolCall, context: RunContext) -> Intercepted: ...


InterceptorFactory = Callable[[Any], ToolInterceptor]
"""Builds a run's interceptor on a worker, from the ``config`` its options give."""

INTERCEPTED_ROLES = ("function", "ask_user")
"""The tools whose calls an interceptor sees (a sub-agent or a handoff is the engine's)."""


def intercepted(call: ToolCall, tool: Tool | None, context: RunContext) -> Intercepted:
    """The run's interceptor's word on ``call`` (of ``tool``; ``None``: a tool the agent
    does not have), or ``PROCEED`` when there is none or the call is the engine's."""
    interceptor = context.tool_interceptor
    if interceptor is None or call.name == FINAL_RESULT:
        return PROCEED
    if tool is not None and tool.role not in INTERCEPTED_ROLES:
        return PROCEED
    return interceptor.intercept(call, context)
