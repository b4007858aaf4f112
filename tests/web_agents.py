"""Agents behind the HTTP API tests: ``ratchet web --agents tests.web_agents:AGENTS``
reads their names; the test's own worker hosts them."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ratchet.agents import Agent, Result, RunContext, ScriptedModel, Thread, ToolCallingAgent, tool
from ratchet.types import ClientTool, Message, TextDelta

CHATTY_EVENTS = 300
SLOW_EVENTS = 40
WRITER_WORDS = 60
SEED_TEXT = 2_000


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


class Writer(Agent):
    """Streams its reply a word every 50 ms (``WRITER_WORDS`` words, about three
    seconds), as a model streaming tokens would; the answer names the attempt."""

    pause = 0.05

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        words = [f"word{n} " for n in range(WRITER_WORDS)]
        for word in words:
            await context.emit(TextDelta(text=word))
            await asyncio.sleep(self.pause)
        answer = "".join(words) + f"(attempt {context.attempt})"
        return Result(final_response=Message.assistant(answer))


@tool(requires_approval=True)
async def pay(to: str, amount: int) -> str:
    """Pay ``amount`` euros to ``to``."""
    return f"paid {amount} to {to}"


def billing() -> ToolCallingAgent:
    model = ScriptedModel(
        [ScriptedModel.call("pay", to="acme", amount=500), "Paid 500 euros to acme."], stream=True
    )
    return ToolCallingAgent(model, [pay])


def _confirm(messages: Sequence[Message], context: RunContext) -> str | Message:
    last = messages[-1]
    if last.role == "tool":
        return f"{'Not confirmed' if last.is_error else 'Confirmed'}: {last.text}"
    return ScriptedModel.call("confirm", action=f"deploy {last.text}")


CONFIRM = ClientTool(
    name="confirm",
    description="Ask the user to confirm an action.",
    parameters={
        "type": "object",
        "properties": {"action": {"type": "string"}},
        "required": ["action"],
    },
)
"""The client tool ``confirmer`` calls (a frontend's, over AG-UI)."""


def confirmer() -> ToolCallingAgent:
    """Asks the client to run its ``confirm`` tool (a frontend tool it offers with the
    run), then says what the client answered."""
    return ToolCallingAgent(ScriptedModel(_confirm, stream=True))


class Seeder(Agent):
    """Makes a long conversation fast: ``seed N`` adds ``N`` exchanges of a
    ``SEED_TEXT``-character question and answer to the thread, then answers like
    ``Echo`` (a session that holds thousands of messages after a few sends)."""

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        words = messages[-1].text.split()
        if words[:1] == ["seed"]:
            pad = "x" * SEED_TEXT
            for n in range(int(words[1])):
                await thread.on_new_messages(
                    [Message.user(f"q{n} {pad}"), Message.assistant(f"a{n} {pad}")]
                )
        return Result(final_response=Message.assistant(f"echo: {messages[-1].text[:40]}"))


class SlowWriter(Writer):
    """``Writer`` at a word every 200 ms (twelve seconds): time enough for a test to
    see the reply streaming and kill its worker before it ends."""

    pause = 0.2


AGENTS = {
    "echo": Echo,
    "chatty": Chatty,
    "slow": Slow,
    "billing": billing,
    "writer": Writer,
    "slow_writer": SlowWriter,
    "confirmer": confirmer,
    "seeder": Seeder,
}


PAGE_AGENTS = {**AGENTS, "slow_writer": SlowWriter}
"""The agents behind ``tests/web/test_web_page.py`` (``AGENTS`` stays as ``test_web``
lists it)."""
