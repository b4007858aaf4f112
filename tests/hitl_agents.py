"""Agents for the human-in-the-loop and steering tests (the worker runs in the
test's process, so they record what really happened in plain lists)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta

from ratchet.agents import (
    Agent,
    Result,
    RunContext,
    ScriptedModel,
    Thread,
    ToolCallingAgent,
    ask_user,
    tool,
)
from ratchet.types import Message


class Ledger:
    """What the tools really did, in the test's process (the worker runs in it)."""

    def __init__(self) -> None:
        self.payments: list[tuple[str, int, int]] = []
        self.lookups: list[str] = []
        self.attempts: list[int] = []


def payment_agent(ledger: Ledger, replies: Sequence[Message | str], **agent_options) -> Agent:
    @tool(requires_approval=lambda args: args["amount"] > 100)
    async def pay(to: str, amount: int, context: RunContext) -> str:
        """Pay ``amount`` euros to ``to``."""
        ledger.payments.append((to, amount, context.attempt))
        return f"paid {amount} to {to}"

    @tool
    async def lookup(name: str) -> str:
        """Look up an account."""
        ledger.lookups.append(name)
        return f"{name}: IBAN NL00"

    def script(messages: Sequence[Message], context: RunContext) -> Message | str:
        index = sum(1 for m in messages if m.role == "assistant")
        if index < len(replies):
            return replies[index]
        seen = [m.text for m in messages if m.role == "tool"]
        return "done: " + " | ".join(seen)

    return ToolCallingAgent(ScriptedModel(script), [pay, lookup, ask_user], **agent_options)


class Blocker(Agent):
    """Turn 1 answers nothing; turn 2 blocks until cancelled, and says so."""

    def __init__(self) -> None:
        self.blocked = asyncio.Event()
        self.cancelled: list[int] = []

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        prompt = next(m.text for m in reversed(thread.messages) if m.role == "user")
        if context.turn == 1:
            await thread.on_new_messages([Message.assistant(f"step 1 of {prompt}")])
            return Result()
        if prompt == "block":
            self.blocked.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled.append(context.turn)
                raise
        return Result(final_response=Message.assistant(f"finished {prompt}"))


HEARTBEAT_WITH_MARGIN = timedelta(seconds=3)
"""For a run whose turn blocks until cancelled: the cancellation reaches the turn in a
heartbeat's answer, within 1.8 s. Not 1 s: a turn in a test process that shares two
cores with another xdist worker and two dev servers can miss a 1 s heartbeat timeout
(acknowledged within 0.4 s of the last), be timed out and run again."""
