"""Rerun a recorded session on a changed agent: every user message of the session is a
case, answered by a run of the new agent inside a durable batch (a RerunBatch
workflow: a killed worker loses no finished case). The new agent's tool calls that
match recorded ones get the recorded results (nothing runs twice: ``lookup`` counts
its real calls), others are refused. The report shows the recorded and the new
answers side by side.
"""

import ratchet
from ratchet import AgentClient, ScriptedModel, ToolCallingAgent, build_worker, tool
from ratchet.evals import EvalsPlugin, assert_gate, contains, start_rerun

CALLS: list[str] = []


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    CALLS.append(city)
    return {"Oslo": "snow", "Lima": "sun"}.get(city, "unknown")


def asked_city(messages) -> str:
    last_user = [m for m in messages if m.role == "user"][-1]
    return "Oslo" if "Oslo" in last_user.text else "Lima"


def terse(messages, context):  # the agent in production
    if messages[-1].role != "tool":
        return ScriptedModel.call("lookup", city=asked_city(messages))
    return messages[-1].text


def friendly(messages, context):  # the change: a friendlier answer
    if messages[-1].role != "tool":
        return ScriptedModel.call("lookup", city=asked_city(messages))
    return f"Expect {messages[-1].text} in {asked_city(messages)} today!"


async def main() -> int:
    client = await AgentClient.connect(task_queue="rerun-example")
    agents = {
        "weather": ToolCallingAgent(ScriptedModel(terse), [lookup]),
        "weather-v2": ToolCallingAgent(ScriptedModel(friendly), [lookup]),
    }
    async with build_worker(client, agents, plugins=[EvalsPlugin()]):
        session = await client.start_session("weather")  # what users really said
        await session.send("Weather in Oslo?")
        await session.send("And in Lima?")
        await session.close()
        rerun = await start_rerun(client, [session.id], agent="weather-v2")
        report = await rerun.report([contains("today")])  # waits for the rerun
    print(report.to_markdown())
    assert CALLS == ["Oslo", "Lima"]  # the rerun answered lookup from the recording
    assert_gate(report, min_score=1.0)  # for CI: raises listing what fails
    return 0


if __name__ == "__main__":
    ratchet.run_main(main)
