"""A run's search attributes cost one billed upsert, as it ends, even when the run
outlives the old 10 s flush interval (each upsert is a Temporal Cloud action)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from temporalio.api.enums.v1 import EventType

from ratchet.agents import ModelResponse, RunContext, ScriptedModel, Tool, ToolCallingAgent, tool
from ratchet.client import AgentClient
from ratchet.types import Message
from ratchet.worker import build_worker

from ..history import events, of_type

CHANGE_VERSION = "TemporalChangeVersion"
"""What ``workflow.patched`` upserts; Temporal Cloud bills no action for it."""


class SlowScript(ScriptedModel):
    """Each call takes 1.2 s: eleven turns outlive the old interval."""

    async def create(
        self, messages: Sequence[Message], tools: Sequence[Tool], context: RunContext
    ) -> ModelResponse:
        await asyncio.sleep(1.2)  # the call's latency, not synchronisation
        return await super().create(messages, tools, context)


@tool
def page(n: int) -> str:
    """Read page n."""
    return f"page {n}"


async def test_a_run_of_eleven_turns_over_thirteen_seconds_upserts_once_as_it_ends(
    agent_client: AgentClient,
):
    script = [*(ScriptedModel.call("page", n=i) for i in range(10)), "read"]
    agent = ToolCallingAgent(SlowScript(script), [page])
    async with build_worker(agent_client, {"slow_pager": agent}):
        run = await agent_client.start_run("slow_pager", "Read ten pages.")
        assert (await run.result()).turns == 11
    upserts = of_type(await events(run), EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES)
    billed = [
        set(e.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields)
        for e in upserts
    ]
    billed = [names for names in billed if names != {CHANGE_VERSION}]
    # Before: one at turn 10 (10 turns and 10 s behind) and one as it ended.
    assert len(billed) == 1
    assert {"AgentStatus", "AgentTurns"} <= billed[0]
