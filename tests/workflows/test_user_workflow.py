"""run_agent inside a workflow of the user's own."""

from __future__ import annotations

import uuid

from ratchet.agents import ScriptedModel, ToolCallingAgent, tool
from ratchet.client import AgentClient
from ratchet.worker import build_worker

from ..history import summary, turn_activities
from ..user_workflows import ResearchAndReview


@tool
def search(query: str) -> str:
    """Search the web."""
    return f"3 results for {query}"


def agents() -> dict:
    researcher = ToolCallingAgent(
        ScriptedModel([ScriptedModel.call("search", query="temporal"), "Temporal is durable."]),
        [search],
    )
    critic = ToolCallingAgent(ScriptedModel(["Looks right."]))
    return {"researcher": researcher, "critic": critic}


async def test_run_agent_composes_agents_in_a_user_workflow(agent_client: AgentClient):
    async with build_worker(agent_client, agents(), workflows=[ResearchAndReview]):
        handle = await agent_client.temporal.start_workflow(
            ResearchAndReview.run,
            "temporal",
            id=f"review-{uuid.uuid4().hex[:8]}",
            task_queue=agent_client.task_queue,
        )
        output = await handle.result()
    assert output == "Temporal is durable.\n---\nLooks right."
    run = agent_client.get_run(handle.id)
    assert [summary(e) for e in await turn_activities(run)] == [
        'turn 1 · "Research: temporal"',
        'turn 2 · after search(query="temporal")',
        'turn 1 · "Review this draft:\\nTemporal is durable."',
    ]
