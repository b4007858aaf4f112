"""Compare two versions of an agent on the same cases: every case runs on both (real
runs through the engine), the same evaluators score both, the report shows them side
by side, and a gate fails when the new version scores too low or costs too much.
"""

import tempfile

import ratchet
from ratchet import AgentClient, ScriptedModel, ToolCallingAgent, build_worker, tool
from ratchet.agents import ModelPrice
from ratchet.evals import Case, called, compare, contains

PRICE = ModelPrice(input_per_million=1.0, output_per_million=4.0)
CASES = [
    Case(id="oslo", prompt="Weather in Oslo?", expected="snow"),
    Case(id="lima", prompt="Weather in Lima?", expected="sun"),
]


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    return {"Oslo": "snow", "Lima": "sun"}.get(city, "unknown")


def city(messages) -> str:
    return messages[0].text.removeprefix("Weather in ").removesuffix("?")


def guesser(messages, context) -> str:  # v1 answers without looking anything up
    return "probably sunny"


def looker(messages, context):  # v2 looks the weather up first
    results = [m.text for m in messages if m.role == "tool"]
    if not results:
        return ScriptedModel.call("lookup", city=city(messages))
    return f"{city(messages)}: {results[-1]}"


async def main() -> int:
    client = await AgentClient.connect(task_queue="evaluations-example")
    agents = {
        "weather": ToolCallingAgent(ScriptedModel(guesser, price=PRICE), [lookup]),
        "weather-v2": ToolCallingAgent(ScriptedModel(looker, price=PRICE), [lookup]),
    }
    async with build_worker(client, agents):
        report = await compare(
            client,
            CASES,
            old="weather",
            new="weather-v2",
            evaluators=[contains(), called("lookup")],
        )
    print(report.to_markdown())
    print("files:", *report.write(tempfile.mkdtemp()))
    failures = report.gate(min_score=0.9, max_cost_increase=2.0)  # v2 may cost up to 3x
    print("gate:", "passed" if not failures else "; ".join(failures))
    assert (report.old_score, report.new_score) == (0.25, 1.0) and not failures
    return 0


if __name__ == "__main__":
    ratchet.run_main(main)
