"""The shipped orchestration workflows, run on a real worker."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from ratchet.agents import RunContext, ScriptedModel, ToolCallingAgent
from ratchet.client import AgentClient
from ratchet.examples.orchestration import (
    FanOut,
    FanOutInput,
    WriterCriticInput,
    WriterCriticLoop,
)
from ratchet.types import Message
from ratchet.worker import build_worker


def team() -> dict:
    """A writer that numbers its drafts, a critic that approves the third, a researcher
    that reports which angle and how much background it saw, and a synthesizer."""

    def write(messages: Sequence[Message], context: RunContext) -> str:
        drafts = sum(1 for m in messages if m.role == "assistant")
        return f"draft {drafts + 1} ({len(messages)} messages seen)"

    def critique(messages: Sequence[Message], context: RunContext) -> str:
        draft = messages[-1].text.rsplit("\n\n", 1)[-1]
        return "APPROVED" if "draft 3" in draft else f"tighten {draft.split(' (')[0]}"

    def research(messages: Sequence[Message], context: RunContext) -> str:
        angle = messages[-1].text.rsplit("Focus on: ", 1)[-1]
        return f"{angle} findings after {len(messages) - 1} background messages"

    def synthesize(messages: Sequence[Message], context: RunContext) -> str:
        return "merged: " + "; ".join(
            line[2:].split(":")[0] for line in messages[-1].text.splitlines() if line[:2] == "- "
        )

    return {
        name: ToolCallingAgent(ScriptedModel(fn))
        for name, fn in [
            ("writer", write),
            ("critic", critique),
            ("researcher", research),
            ("synthesizer", synthesize),
        ]
    }


async def test_writer_critic_loop_revises_on_one_thread_until_approved(agent_client: AgentClient):
    async with build_worker(agent_client, team(), workflows=[WriterCriticLoop]):
        result = await agent_client.temporal.execute_workflow(
            WriterCriticLoop.run,
            WriterCriticInput(brief="a haiku about retries"),
            id=f"critic-{uuid.uuid4().hex[:8]}",
            task_queue=agent_client.task_queue,
        )
    # The writer's thread grows by two messages a round: it remembers earlier drafts.
    assert result.draft == "draft 3 (5 messages seen)"
    assert result.approved and result.rounds == 3
    assert result.critiques == ["tighten draft 1", "tighten draft 2"]
    assert result.usage.requests == 6  # 3 drafts, 3 reviews


async def test_fan_out_runs_branches_on_forks_of_one_background_thread(
    agent_client: AgentClient,
):
    background = [Message.user("We sell bikes."), Message.assistant("Noted.")]
    async with build_worker(agent_client, team(), workflows=[FanOut]):
        handle = await agent_client.temporal.start_workflow(
            FanOut.run,
            FanOutInput(
                question="Where should we open a shop?",
                angles=["rent", "footfall", "competition"],
                background=background,
            ),
            id=f"fanout-{uuid.uuid4().hex[:8]}",
            task_queue=agent_client.task_queue,
        )
        result = await handle.result()
        history = [e async for e in handle.fetch_history_events()]
    assert result.findings == {
        angle: f"{angle} findings after 2 background messages"
        for angle in ["rent", "footfall", "competition"]
    }
    assert result.answer == "merged: rent; footfall; competition"
    # The three branches were scheduled together, before any of them completed.
    kinds = [e.event_type for e in history]
    first_done = kinds.index(12)  # ACTIVITY_TASK_COMPLETED
    assert kinds[:first_done].count(10) == 3  # ACTIVITY_TASK_SCHEDULED
