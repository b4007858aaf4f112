"""A workflow of a user's own that composes two agents with run_agent."""

from __future__ import annotations

import asyncio

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ratchet.types import Message, ShareToken, StateChanged
    from ratchet.wire import RunOptions
    from ratchet.workflows import AgentRunner, RunHooks, run_agent


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


@workflow.defn
class SharedPlan:
    """A planner shares its "plan" key with a writer (read/write) and a reader (read-only);
    then planner and writer change the plan at the same time."""

    @workflow.run
    async def run(self) -> dict:
        changes: list[StateChanged] = []
        planner = AgentRunner("planner", hooks=RunHooks(state_hooks=[changes.append]))
        await planner.run("make a plan")  # its turn shares "plan" with write access
        (token,) = planner.tokens
        reader_token = planner.share("plan")  # the host can share too; read-only
        writer = AgentRunner("writer", shared=[token])
        drafted = await writer.run("write the draft")
        # Both first turns are scheduled together, so both start from the same version.
        revised, edited = await asyncio.gather(planner.run("revise"), writer.run("edit"))
        read = await AgentRunner("reader", shared=[reader_token]).run("read")
        entry = planner.state.session.state["plan"]
        return {
            "outputs": [drafted.output, revised.output, edited.output, read.output],
            "conflicts": [
                c.model_dump(mode="json") for c in revised.state_conflicts + edited.state_conflicts
            ],
            "plan": entry.data,
            "version": entry.version,
            # Every commit on the planner's keys, by any agent holding a token.
            "changes": [[c.by, c.keys["plan"]] for c in changes],
        }


@workflow.defn
class ForeignToken:
    @workflow.run
    async def run(self) -> str:
        token = ShareToken(id="share_elsewhere", owner="session-x", agent="planner", key="plan")
        return (await run_agent("writer", "edit", shared=[token])).output
