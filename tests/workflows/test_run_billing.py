"""What a run's history bills beyond its turns: one search-attribute upsert, as it
ends, even when the run outlives the old 10 s flush interval, and no patch marker
(each is a Temporal Cloud action): an ``AgentRun`` was born with those changes."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent

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
    history = await events(run)
    upserts = of_type(history, EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES)
    billed = billed_upserts(upserts)
    # Before: one at turn 10 (10 turns and 10 s behind) and one as it ended.
    assert len(billed) == 1
    assert {"AgentStatus", "AgentTurns"} <= billed[0]
    # As an AgentRunWorkflow (0.1's type): the longer interval's patch marker.
    assert of_type(history, EventType.EVENT_TYPE_MARKER_RECORDED) == []


async def test_a_short_run_records_no_patch_marker_and_its_turns_keep_their_fairness_key(
    agent_client: AgentClient,
):
    script = [ScriptedModel.call("page", n=1), ScriptedModel.call("page", n=2), "read"]
    agent = ToolCallingAgent(ScriptedModel(script), [page])
    async with build_worker(agent_client, {"pager": agent}):
        run = await agent_client.start_run("pager", "Read two pages.")
        assert (await run.result()).turns == 3
    history = await events(run)
    # Before: the turn-fairness patch's marker (and its TemporalChangeVersion upsert)
    # in the first task, one billed action per workflow run.
    assert of_type(history, EventType.EVENT_TYPE_MARKER_RECORDED) == []
    upserts = of_type(history, EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES)
    assert len(upserts) == len(billed_upserts(upserts)) == 1
    turns = of_type(history, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    keys = {t.activity_task_scheduled_event_attributes.priority.fairness_key for t in turns}
    assert keys == {"pager"}


def billed_upserts(upserts: list[HistoryEvent]) -> list[set[str]]:
    """The attributes each upsert sets, but for those of TemporalChangeVersion alone."""
    names = [
        set(e.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields)
        for e in upserts
    ]
    return [n for n in names if n != {CHANGE_VERSION}]
