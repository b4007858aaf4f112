"""A complete agent: one tool, a worker in this process, one durable run.

Start a dev server in another terminal (``ratchet server``), then::

    python examples/quickstart.py

With OPENAI_API_KEY set the agent asks OpenAI; without it, a scripted model
gives the replies a model would, so the example runs offline.
"""

import os
from collections.abc import Sequence

import ratchet
from ratchet import (
    AgentClient,
    Message,
    OpenAIChatModel,
    RunContext,
    ScriptedModel,
    ToolCallingAgent,
    build_worker,
    tool,
)

FORECASTS = {"oslo": "light snow, -3 °C", "lisbon": "sunny, 19 °C"}


@tool
async def weather(city: str) -> str:
    """Today's forecast for a city."""
    return FORECASTS.get(city.lower(), "no forecast")


def offline(messages: Sequence[Message], context: RunContext) -> str | Message:
    """Without an API key, a scripted model: for each question, the two forecasts,
    then the comparison (so a chat goes on for as many messages as you send)."""
    asked = max(i for i, m in enumerate(messages) if m.role == "user")
    looked_up = sum(m.role == "tool" for m in messages[asked:])
    if looked_up < 2:
        return ScriptedModel.call("weather", city=("Oslo", "Lisbon")[looked_up])
    return "Lisbon: sunny and 19 °C, against light snow in Oslo."


def travel_agent() -> ToolCallingAgent:
    if os.environ.get("OPENAI_API_KEY"):
        model = OpenAIChatModel("gpt-4o-mini")
    else:
        model = ScriptedModel(offline)
    return ToolCallingAgent(model, [weather], instructions="Compare destinations. Be brief.")


AGENTS = {"travel": travel_agent}  # what `ratchet worker --agents quickstart:AGENTS` hosts


async def main() -> int:
    client = await AgentClient.connect(task_queue="quickstart")  # TEMPORAL_ADDRESS, or localhost
    async with build_worker(client, AGENTS):
        result = await client.run("travel", "Oslo or Lisbon this weekend?")
    print(result.output)
    print(f"{result.turns} turns, {result.usage.total_tokens} tokens")
    return 0


if __name__ == "__main__":
    ratchet.run_main(main)
