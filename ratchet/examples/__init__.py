"""The demo agent: a travel helper with two tools.

Without OPENAI_API_KEY it runs on a ScriptedModel, so the demo works offline.
"""

from __future__ import annotations

import asyncio
import os
import sys

from ratchet.agents import Agent, ScriptedModel, ToolCallingAgent, tool

__all__ = [
    "AGENTS",
    "DEMO_PROMPT",
    "DEMO_TOOL_SECONDS",
    "demo_script",
    "packing_list",
    "travel_agent",
    "weather",
]

FORECASTS = {"oslo": "light snow, -3 °C", "lisbon": "sunny, 19 °C", "tokyo": "cloudy, 12 °C"}
DEMO_PROMPT = (
    "I'm choosing between Oslo and Lisbon for a weekend. "
    "Which has better weather, and what should I pack?"
)
DEMO_TOOL_SECONDS = 1.0


@tool
async def weather(city: str) -> str:
    """Today's forecast for a city."""
    _log(f"tool weather(city={city!r}) started")
    await asyncio.sleep(DEMO_TOOL_SECONDS)  # a slow API, so there is time to kill a worker
    return FORECASTS.get(city.lower(), "no forecast available")


@tool
async def packing_list(forecast: str) -> list[str]:
    """What to pack for a forecast."""
    _log(f"tool packing_list(forecast={forecast!r}) started")
    await asyncio.sleep(DEMO_TOOL_SECONDS)
    if "snow" in forecast or "-" in forecast:
        return ["warm coat", "boots", "gloves"]
    return ["sunglasses", "light jacket", "sunscreen"]


def _log(line: str) -> None:
    print(f"[worker {os.getpid()}] {line}", file=sys.stderr, flush=True)


def demo_script() -> ScriptedModel:
    return ScriptedModel(
        [
            ScriptedModel.call("weather", city="Oslo"),
            ScriptedModel.call("weather", city="Lisbon"),
            ScriptedModel.call("packing_list", forecast=FORECASTS["lisbon"]),
            "Lisbon wins: sunny and 19 °C against light snow in Oslo. "
            "Pack sunglasses, a light jacket and sunscreen.",
        ],
        name="demo-script",
    )


def travel_agent() -> Agent:
    model = demo_script()
    if os.environ.get("OPENAI_API_KEY"):
        from ratchet.agents import OpenAIChatModel  # loads openai (a second) only when used

        model = OpenAIChatModel()
    return ToolCallingAgent(
        model,
        [weather, packing_list],
        instructions="You help travellers compare destinations. Use the tools; be brief.",
    )


AGENTS = {"travel": travel_agent}
