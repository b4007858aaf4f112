"""A session whose conversation lives at OpenAI (the Responses API): each turn sends
only what the service has not seen, plus the previous response's id. The session
keeps that cursor across messages, continue-as-new and forks.

Needs a real model: ``OPENAI_API_KEY=... python examples/responses_session.py``.
"""
# needs: OPENAI_API_KEY

import ratchet
from ratchet import AgentClient, RunOptions, SessionOptions, ToolCallingAgent, build_worker
from ratchet.agents import OpenAIResponsesModel


def assistant() -> ToolCallingAgent:
    model = OpenAIResponsesModel("gpt-4o-mini", stream=True)  # streams text deltas to watchers
    return ToolCallingAgent(model, [], instructions="Be brief.")


async def main() -> int:
    client = await AgentClient.connect(task_queue="responses-example")
    options = SessionOptions(run=RunOptions(thread_kind="openai.responses"))
    async with build_worker(client, {"assistant": assistant}):
        session = await client.start_session("assistant", options=options)
        print((await session.send("Name a city in Portugal.")).output)
        print((await session.send("And its population?")).output)
        await session.close()
    return 0


if __name__ == "__main__":
    ratchet.run_main(main)
