"""Runs start as ``AgentRun``, a workflow type born with every change since 0.1.0,
so they record no patch marker (a billed action each). Runs started as 0.1's
``AgentRunWorkflow`` (by an older client, or a schedule made by one) still run."""

from __future__ import annotations

import uuid

from temporalio.api.enums.v1 import EventType

from ratchet.client import AgentClient
from ratchet.types import Message
from ratchet.wire import AGENT_RUN_WORKFLOW, RUN_WORKFLOW, RunInput, RunResult
from ratchet.worker import build_worker
from ratchet.workflows._patches import BORN_WITH

from ..history import events, of_type
from .test_multi_agent import research_team

CHILD_STARTED = EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
MARKER = EventType.EVENT_TYPE_MARKER_RECORDED


async def test_an_owned_run_and_its_sub_agent_are_agent_runs_with_no_patch_marker(
    agent_client: AgentClient,
):
    async with build_worker(agent_client, research_team()):
        run = await agent_client.start_run("lead", "explain tides", owner="o'hara")
        assert (await run.result()).output == "report: tides follow the moon"
        (started,) = of_type(await events(run), CHILD_STARTED)
        attributes = started.start_child_workflow_execution_initiated_event_attributes
        child = agent_client.get_run(attributes.workflow_id)
        await child.result()
    assert attributes.workflow_type.name == AGENT_RUN_WORKFLOW
    for handle in (run, child):
        assert (await handle.workflow.describe()).workflow_type == AGENT_RUN_WORKFLOW
        # Under 0.1's type: the markers of the sub-agent's type and its owner.
        assert of_type(await events(handle), MARKER) == []
    assert (await agent_client.describe(child.id)).owner == "o'hara"


async def test_a_run_started_as_the_0_1_type_still_runs_and_is_shown_as_a_run(
    agent_client: AgentClient,
):
    async with build_worker(agent_client, research_team()):
        started = await agent_client.temporal.start_workflow(
            RUN_WORKFLOW,  # as a 0.1 client starts a run
            RunInput(agent="lead", messages=[Message.user("explain tides")]),
            id=f"old-{uuid.uuid4().hex[:8]}",
            task_queue=agent_client.task_queue,
            result_type=RunResult,
        )
        run = agent_client.get_run(started.id)
        assert (await run.result()).output == "report: tides follow the moon"
    assert await agent_client.kind_of(started.id) == "run"
    assert (await agent_client.describe(started.id)).kind == "run"
    (child,) = of_type(await events(run), CHILD_STARTED)
    # It asks for the change (one marker) and starts its sub-agent as an AgentRun.
    attributes = child.start_child_workflow_execution_initiated_event_attributes
    assert attributes.workflow_type.name == AGENT_RUN_WORKFLOW
    assert len(of_type(await events(run), MARKER)) == 1


def test_agent_run_was_born_with_these_changes_and_takes_no_later_one_unasked():
    # A change made after AgentRun's first release is asked for with workflow.patched
    # in it too: taken unasked, histories recorded before it would not replay.
    assert BORN_WITH == {
        AGENT_RUN_WORKFLOW: {
            "ratchet-results-when-settled",
            "ratchet-sub-agents-carry-owner",
            "ratchet-reanchor-asked",
            "ratchet-longer-flush-interval",
            "ratchet-turn-events-name-the-run",
            "ratchet-sub-agents-as-agent-run",
            "ratchet-turn-fairness",
            "ratchet-throttles-not-attempts",
        }
    }
