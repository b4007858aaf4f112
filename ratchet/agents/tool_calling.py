"""ToolCallingAgent: one model call per turn, then the tools it asked for."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from .agent import Agent, Result
from .context import RunContext
from .messages import Message, ToolCall
from .models.base import ModelClient, ModelResponse
from .thread import Thread
from .tools import Tool


class ToolCallingAgent(Agent):
    """Calls the model; if it asked for tools, runs them (in parallel) and returns.

    The run ends on the first reply without tool calls. Unknown tools and bad
    arguments become error messages the model reads on its next turn.
    """

    def __init__(
        self,
        model: ModelClient,
        tools: Sequence[Tool] = (),
        *,
        instructions: str | None = None,
    ) -> None:
        self.model = model
        self.tools = {t.name: t for t in tools}
        self.instructions = instructions
        self.thread_kinds = model.thread_kinds

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        prompt = list(thread.messages)
        if self.instructions:
            prompt.insert(0, Message.system(self.instructions))
        response = await context.once(
            "model",
            lambda: self.model.create(prompt, list(self.tools.values()), context),
            ModelResponse,
        )
        reply = response.message
        if response.cursor is not None:
            thread.cursor = response.cursor
        await thread.on_new_messages([reply])
        if not reply.tool_calls:
            return Result(final_response=reply, usage=response.usage)
        results = await asyncio.gather(*(self._call(c, context) for c in reply.tool_calls))
        await thread.on_new_messages(results)
        return Result(usage=response.usage)

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
