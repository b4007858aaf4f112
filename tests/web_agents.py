"""Agents behind the HTTP API tests: ``ratchet web --agents tests.web_agents:AGENTS``
reads their names; the test's own worker hosts them."""

from __future__ import annotations

import asyncio

from ratchet.agents import (
    Agent,
    Message,
    Result,
    RunContext,
    ScriptedModel,
    Thread,
    ToolCallingAgent,
    tool,
)

CHATTY_EVENTS = 300
SLOW_EVENTS = 40


class Echo(Agent):
    """Answers with the message it was sent, and counts messages in its state."""

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        count = context.state.get("count", 0) + 1
        context.state.update("count", count)
        return Result(final_response=Message.assistant(f"echo {count}: {messages[-1].text}"))


class Chatty(Agent):
    """Emits ``CHATTY_EVENTS`` events in its one turn, then answers."""

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        for n in range(CHATTY_EVENTS):
            await context.emit({"n": n})
        return Result(final_response=Message.assistant(f"said {CHATTY_EVENTS} things"))


class Slow(Agent):
    """Emits ``SLOW_EVENTS`` events a tenth of a second apart (a reply streaming for
    a few seconds), then answers."""

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        for n in range(SLOW_EVENTS):
            await context.emit({"n": n, "attempt": context.attempt})
            await asyncio.sleep(0.1)  # stands in for the model producing the next token
        return Result(final_response=Message.assistant(f"done after attempt {context.attempt}"))


@tool(requires_approval=True)
async def pay(to: str, amount: int) -> str:
    """Pay ``amount`` euros to ``to``."""
    return f"paid {amount} to {to}"


def billing() -> ToolCallingAgent:
    model = ScriptedModel([ScriptedModel.call("pay", to="acme", amount=500), "Paid."])
    return ToolCallingAgent(model, [pay])


AGENTS = {"echo": Echo, "chatty": Chatty, "slow": Slow, "billing": billing}
