"""Handoffs, sub-agents as child runs, and token budgets."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from temporalio.api.enums.v1 import EventType

from ratchet.agents import RunContext, ScriptedModel, ToolCallingAgent, agent_tool
from ratchet.client import AgentClient
from ratchet.errors import RunFailedError
from ratchet.types import Message
from ratchet.wire import RunOptions
from ratchet.worker import build_worker

from ..history import events, of_type

CHILD_STARTED = EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED


def replies(*script: Message | str):
    """A script by position among this agent's own turns: the n-th call gets the
    n-th reply (other agents' messages in the thread do not count)."""
    calls = {"n": 0}

    def reply(messages: Sequence[Message], context: RunContext) -> Message | str:
        calls["n"] += 1
        item = script[min(calls["n"], len(script)) - 1]
        return item(messages) if callable(item) else item

    return reply


def last_tool_text(messages: Sequence[Message]) -> str:
    return next(m.text for m in reversed(messages) if m.role == "tool")


def last_user_text(messages: Sequence[Message]) -> str:
    return next(m.text for m in reversed(messages) if m.role == "user")


async def test_a_handoff_moves_the_session_and_its_thread_to_another_agent(
    agent_client: AgentClient,
):
    triage = ToolCallingAgent(
        ScriptedModel(replies(ScriptedModel.call("transfer_to_billing"))),
        handoffs=["billing"],
    )
    billing = ToolCallingAgent(
        ScriptedModel(replies(lambda m: f"billing: {last_user_text(m)} ({len(m)} messages)"))
    )
    async with build_worker(agent_client, {"triage": triage, "billing": billing}):
        session = await agent_client.start_session("triage")
        first = await session.send("my invoice is wrong")
        second = await session.send("it says 300")
        status = await session.status()
        thread = await session.thread()
    assert (first.agent, first.output) == ("billing", "billing: my invoice is wrong (3 messages)")
    assert (second.agent, second.output) == ("billing", "billing: it says 300 (5 messages)")
    assert status.agent == "billing"
    assert [m.role for m in thread.messages] == [
        "user",
        "assistant",  # triage calls transfer_to_billing
        "tool",
        "assistant",  # billing answers
        "user",
        "assistant",
    ]


def research_team(researcher_reply: str = "tides follow the moon") -> dict:
    lead = ToolCallingAgent(
        ScriptedModel(
            replies(
                ScriptedModel.call("researcher", input="why are there tides?"),
                lambda m: f"report: {last_tool_text(m)}",
            )
        ),
        [agent_tool("researcher", "Research a question and answer it briefly.")],
    )
    researcher = ToolCallingAgent(ScriptedModel(replies(researcher_reply)))
    return {"lead": lead, "researcher": researcher}


async def test_a_sub_agent_runs_as_a_child_run_and_its_usage_counts_in_the_parent(
    agent_client: AgentClient,
):
    async with build_worker(agent_client, research_team()):
        handle = await agent_client.start_run("lead", "explain tides")
        result = await handle.result()
        (started,) = of_type(await events(handle), CHILD_STARTED)
        child = agent_client.get_run(
            started.start_child_workflow_execution_initiated_event_attributes.workflow_id
        )
        child_result = await child.result()
        child_state = await child.record()
        parent_state = await handle.record()
    assert result.output == "report: tides follow the moon"
    assert child_result.output == "tides follow the moon"
    assert child_state.session.parent_agent_id == "lead"
    assert child_state.session.metadata["parent_workflow_id"] == handle.id
    # The child has its own thread: the prompt the lead gave it and its answer.
    assert [m.text for m in child_state.session.thread.messages] == [
        "why are there tides?",
        "tides follow the moon",
    ]
    own = sum(s.usage.total_tokens for s in parent_state.execution.step_results)
    assert child_result.usage.total_tokens > 0
    assert result.usage.total_tokens == own + child_result.usage.total_tokens


async def test_a_run_over_its_token_budget_fails_with_a_clear_error(agent_client: AgentClient):
    looping = ToolCallingAgent(
        ScriptedModel(replies(ScriptedModel.call("researcher", input="more"))),
        [agent_tool("researcher", "Research.")],
    )
    team = {**research_team(), "looping": looping}
    async with build_worker(agent_client, team):
        with pytest.raises(RunFailedError) as e:
            await agent_client.run("looping", "go", options=RunOptions(token_budget=60))
    assert e.value.error_type == "BudgetExceededError"
    assert "over its token_budget of 60" in str(e.value)


async def test_a_sub_agent_draws_on_its_parents_budget(agent_client: AgentClient):
    # The researcher's long answer alone costs more than the lead has left.
    team = research_team(researcher_reply="tides " * 400)
    async with build_worker(agent_client, team):
        with pytest.raises(RunFailedError) as e:
            await agent_client.run("lead", "explain tides", options=RunOptions(token_budget=100))
    assert e.value.error_type == "BudgetExceededError"
    assert "Sub-agent researcher" in str(e.value)
