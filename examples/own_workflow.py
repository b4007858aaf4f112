"""Agents inside a workflow of your own: a researcher drafts, a critic reviews.

``run_agent`` is the loop Ratchet's own run workflow uses; each turn of each agent
is an activity in your workflow's history, checkpointed like any other.
"""

from temporalio import workflow

import ratchet
from ratchet import AgentClient, ScriptedModel, ToolCallingAgent, build_worker

with workflow.unsafe.imports_passed_through():
    from ratchet.workflows import run_agent


@workflow.defn
class ResearchAndReview:
    @workflow.run
    async def run(self, topic: str) -> str:
        draft = await run_agent("researcher", f"Research: {topic}")
        review = await run_agent("critic", f"Review this draft:\n{draft.output}")
        return f"{draft.output}\n-- critic: {review.output}"


AGENTS = {
    "researcher": lambda: ToolCallingAgent(ScriptedModel(["Event sourcing keeps every step."]), []),
    "critic": lambda: ToolCallingAgent(ScriptedModel(["Clear. Add an example."]), []),
}


async def main() -> int:
    client = await AgentClient.connect(task_queue="own-workflow-example")
    async with build_worker(client, AGENTS, workflows=[ResearchAndReview]):
        answer = await client.temporal.execute_workflow(
            ResearchAndReview.run,
            "durable execution",
            id="research-durable-execution",
            task_queue=client.task_queue,
        )
    print(answer)
    return 0


if __name__ == "__main__":
    ratchet.run_main(main)
