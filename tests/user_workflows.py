"""A workflow of a user's own that composes two agents with run_agent."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ratchet.agents import Message
    from ratchet.workflows import RunOptions, run_agent


@workflow.defn
class ResearchAndReview:
    @workflow.run
    async def run(self, topic: str) -> str:
        draft = await run_agent("researcher", f"Research: {topic}")
        assert draft.thread is not None
        review = await run_agent(
            "critic",
            [Message.user(f"Review this draft:\n{draft.output}")],
            options=RunOptions(max_turns=3),
        )
        return f"{draft.output}\n---\n{review.output}"
