"""ToolCallingAgent: one model call per turn, then the tools it asked for."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from .agent import Agent, Result
from .context import RunContext
from .messages import Message, ToolCall
from .models.base import ModelClient, ModelResponse, empty_reply
from .pending import PendingAction
from .thread import Thread
from .tools import Tool, tool

HANDOFF_PREFIX = "transfer_to_"


class ToolCallingAgent(Agent):
    """Calls the model; if it asked for tools, runs them (in parallel) and returns.

    The run ends on the first reply without tool calls. Unknown tools and bad
    arguments become error messages the model reads on its next turn.

    Calls that need a person (``requires_approval``, ``approval_policy``, ``ask_user``),
    ``durable`` tools and sub-agents (``agent_tool``) are not run in the turn: they
    go back to the engine as pending work, and their results arrive on the next turn.
    ``handoffs`` names agents this one may hand the run to (a ``transfer_to_<name>``
    tool each).
    """

    def __init__(
        self,
        model: ModelClient,
        tools: Sequence[Tool] = (),
        *,
        instructions: str | None = None,
        approval_policy: Callable[[str, dict[str, Any]], bool] | None = None,
        handoffs: Sequence[str] = (),
    ) -> None:
        self.model = model
        self.tools = {t.name: t for t in [*tools, *map(_handoff_tool, handoffs)]}
        self.instructions = instructions
        self.approval_policy = approval_policy
        """Called with each call's tool name and arguments: ``True`` asks for approval."""
        self.thread_kinds = model.thread_kinds

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        prompt = list(thread.messages)
        if self.instructions:
            prompt.insert(0, Message.system(self.instructions))
        # Not waited for: if the reply is final, the turn's result records it; if it
        # asks for tools, the check before the first tool writes it.
        response = await context.once(
            "model", lambda: self._ask(prompt, context), ModelResponse, wait=False
        )
        reply = response.message
        if response.cursor is not None:
            thread.cursor = response.cursor
        await thread.on_new_messages([reply])
        if not reply.tool_calls:
            return Result(final_response=reply, usage=response.usage)
        pending: list[PendingAction] = []
        now: list[ToolCall] = []
        handoff = None
        for call in reply.tool_calls:
            tool = self.tools.get(call.name)
            if tool is not None and tool.role == "handoff" and handoff is None:
                handoff = tool.agent
            action = tool.pending_for(call, self.approval_policy) if tool else None
            if action is None:
                now.append(call)
            else:
                pending.append(action)
        results = await asyncio.gather(*(self._call(c, context) for c in now))
        await thread.on_new_messages(results)
        return Result(usage=response.usage, pending=pending, handoff=handoff)

    async def _ask(self, prompt: list[Message], context: RunContext) -> ModelResponse:
        response = await self.model.create(prompt, list(self.tools.values()), context)
        if not response.message.content and not response.message.tool_calls:
            # Raised inside the step, so the checkpoint never records an empty reply.
            raise empty_reply(response.model)
        return response

    async def _call(self, call: ToolCall, context: RunContext) -> Message:
        tool = self.tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(self.tools)) or "(none)"
            return Message.tool(
                call,
                f"Error: there is no tool named {call.name!r}. Available tools: {known}.",
                is_error=True,
            )
        return await context.once(f"tool:{call.id}", lambda: tool.invoke(call, context), Message)


def _handoff_tool(agent: str) -> Tool:
    def transfer() -> str:
        return f"Transferred to {agent}; it takes over from the next turn."

    described = tool(
        name=f"{HANDOFF_PREFIX}{agent}",
        description=f"Hand this conversation over to the {agent} agent.",
    )(transfer)
    return replace(described, role="handoff", agent=agent)
