"""A session that started sub-agents as 0.1's ``AgentRunWorkflow`` goes on on this
code: its workflow run keeps starting them as that type (its history recorded no
patch marker for the change, so a replay must take the old path), and once it has
continued as new it starts them as ``AgentRun``; every run of it replays."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent

from ratchet.agents import RunContext, ScriptedModel, ToolCallingAgent, agent_tool
from ratchet.client import AgentClient
from ratchet.deploy import replay
from ratchet.devserver import DevServer
from ratchet.types import Message
from ratchet.wire import AGENT_RUN_WORKFLOW, RUN_WORKFLOW
from ratchet.worker import build_worker

from .test_closed_after_continue_as_new import run_with_0_1_0

CHILD = EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
MARKER = EventType.EVENT_TYPE_MARKER_RECORDED

TEAM = """
from ratchet.agents import RunContext, ScriptedModel, ToolCallingAgent, agent_tool

def lead_reply(messages, context):
    if messages[-1].role == "user":
        return ScriptedModel.call("researcher", input="why?")
    return "report: " + next(m.text for m in reversed(messages) if m.role == "tool")

def team():
    researcher = ToolCallingAgent(ScriptedModel(lambda messages, context: "moon"))
    tools = [agent_tool("researcher", "Research a question.")]
    return {"lead": ToolCallingAgent(ScriptedModel(lead_reply), tools), "researcher": researcher}
"""

START_WITH_0_1_0 = (
    TEAM
    + """
import asyncio, sys
from ratchet.process import hard_exit
from ratchet.client import AgentClient
from ratchet.wire import SessionOptions
from ratchet.worker import build_worker

async def main():
    client = await AgentClient.connect(sys.argv[1], task_queue=sys.argv[2])
    options = SessionOptions(continue_as_new_after_runs=2)
    async with build_worker(client, team()):
        session = await client.start_session("lead", options=options)
        print((await session.send("one")).output)
    print(session.id)

asyncio.run(main())
hard_exit(0)
"""
)


def lead_reply(messages: Sequence[Message], context: RunContext) -> Message | str:
    if messages[-1].role == "user":
        return ScriptedModel.call("researcher", input="why?")
    return "report: " + next(m.text for m in reversed(messages) if m.role == "tool")


def team() -> dict:
    researcher = ToolCallingAgent(ScriptedModel(lambda messages, context: "moon"))
    tools = [agent_tool("researcher", "Research a question.")]
    return {"lead": ToolCallingAgent(ScriptedModel(lead_reply), tools), "researcher": researcher}


def patches(events: Sequence[HistoryEvent]) -> list[str]:
    found = [e.marker_recorded_event_attributes.details for e in events if e.event_type == MARKER]
    return [d["patch-data"].payloads[0].data.decode() for d in found if "patch-data" in d]


@pytest.mark.slow  # a child process running 0.1.0
async def test_a_0_1_0_session_keeps_its_sub_agents_type_until_it_continues_as_new(
    temporal_server: DevServer, agent_client: AgentClient, tmp_path: Path
):
    printed = await run_with_0_1_0(
        tmp_path, START_WITH_0_1_0, temporal_server.address, agent_client.task_queue
    )
    assert printed.split()[:2] == ["report:", "moon"]
    session = agent_client.get_session(printed.split()[-1])
    async with build_worker(agent_client, team()):
        assert (await session.send("two")).output == "report: moon"  # then continues as new
        assert (await session.send("three")).output == "report: moon"
        await session.close()
    temporal = agent_client.temporal
    listed = temporal.list_workflows(f"WorkflowId = '{session.id}'")
    runs = sorted([info async for info in listed], key=lambda info: info.start_time)
    histories = [
        await temporal.get_workflow_handle(session.id, run_id=info.run_id).fetch_history()
        for info in runs
    ]
    started = [
        [e.start_child_workflow_execution_initiated_event_attributes.workflow_type.name
         for e in history.events if e.event_type == CHILD]
        for history in histories
    ]  # fmt: skip
    # 0.1.0's sub-agent and this code's, in the run 0.1.0 started; then an AgentRun.
    assert started == [[RUN_WORKFLOW, RUN_WORKFLOW], [AGENT_RUN_WORKFLOW]]
    assert not any("sub-agents-as-agent-run" in p for p in patches(histories[0].events))
    assert any("sub-agents-as-agent-run" in p for p in patches(histories[1].events))
    report = await replay(histories)
    assert report.replayed == 2 and report.ok, report.lines()
