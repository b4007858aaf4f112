"""Compaction policies, alone and applied by the engine between turns."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from temporalio.client import WorkflowExecutionStatus

from ratchet.agents import ScriptedModel, ToolCallingAgent, tool
from ratchet.agents._compaction import (
    DropToolResults,
    KeepLastTurns,
    Summarize,
    SummarizingAgent,
    turn_groups,
)
from ratchet.client import AgentClient
from ratchet.types import Message, ToolCall
from ratchet.wire import RunOptions
from ratchet.worker import build_worker

from ..history import turn_activities
from ..workflows.test_threads import raw_history


def conversation(steps: int) -> list[Message]:
    messages = [Message.system("Be brief."), Message.user("Read the pages.")]
    for i in range(steps):
        call = ToolCall(id=f"c{i}", name="fetch", arguments=f'{{"page": {i}}}')
        messages += [Message.assistant(tool_calls=[call]), Message.tool(call, f"page {i}")]
    return messages + [Message.assistant("done")]


def test_groups_keep_tool_results_with_their_call():
    groups = turn_groups(conversation(2))
    assert [[m.role for m in g] for g in groups] == [
        ["system"],
        ["user"],
        ["assistant", "tool"],
        ["assistant", "tool"],
        ["assistant"],
    ]


def test_keep_last_turns_keeps_the_system_prompt_the_task_and_the_tail():
    messages = conversation(5)
    kept = KeepLastTurns(max_messages=6, turns=2).compact(messages)
    assert kept == [*messages[:2], *messages[-3:]]
    assert kept[2].role == "tool" or kept[2].role == "assistant"
    assert all(m.role != "tool" or kept[i - 1].tool_calls for i, m in enumerate(kept))


def test_drop_tool_results_keeps_the_calls_and_notes_what_was_dropped():
    messages = conversation(4)
    compacted = DropToolResults(max_tokens=1, keep_turns=2).compact(messages)
    assert len(compacted) == len(messages)
    tools = [m.content for m in compacted if m.role == "tool"]
    assert tools[:3] == ["[tool result dropped to save context: 6 characters]"] * 3
    assert tools[3] == "page 3"
    assert DropToolResults(max_tokens=1, keep_turns=2).compact(compacted) == compacted


def test_a_policy_needs_a_budget():
    with pytest.raises(ValidationError, match="set max_messages or max_tokens"):
        KeepLastTurns(turns=3)
    assert KeepLastTurns(max_messages=3).over_budget(conversation(1)) is True
    assert KeepLastTurns(max_tokens=10_000).over_budget(conversation(1)) is False


def paging_agent(steps: int, seen: list[int], window: int | None = None) -> ToolCallingAgent:
    """Scripted by turn number, so it does not depend on how much thread it sees."""

    @tool
    def fetch(page: int) -> str:
        """Fetch a page."""
        return f"<page-{page}>" + "x" * 400

    def reply(messages, context):
        seen.append(len(messages))
        if context.turn <= steps:
            return ScriptedModel.call("fetch", page=context.turn - 1)
        return "done"

    return ToolCallingAgent(ScriptedModel(reply, context_window=window), [fetch])


async def run(client: AgentClient, agents: dict, steps: int, **options):
    async with build_worker(client, agents):
        handle = await client.start_run(
            "pager", "Read the pages.", options=RunOptions(max_turns=steps + 3, **options)
        )
        result = await handle.result()
        state = await handle.record()
    return handle, result, state


async def test_the_engine_keeps_what_the_model_sees_small_and_the_log_whole(
    agent_client: AgentClient,
):
    seen: list[int] = []
    policy = KeepLastTurns(max_messages=7, turns=2)
    handle, result, state = await run(
        agent_client, {"pager": lambda: paging_agent(10, seen)}, 10, compaction=policy
    )

    assert result.output == "done" and result.turns == 11
    assert max(seen) <= 7 + 2  # compacted before each turn; a turn adds two messages
    thread = state.session.thread
    assert len(thread.visible()) <= 9 and len(thread.messages) == 22  # the log keeps all
    assert thread.visible()[0].content == "Read the pages."
    # Compaction changed only the view: every page is still in history, once.
    raw = await raw_history(handle)
    assert all(raw.count(f"<page-{i}>".encode()) == 1 for i in range(10))


async def test_a_runs_summary_is_made_inside_its_turn_and_joins_the_log(
    agent_client: AgentClient,
):
    seen: list[int] = []
    summarised: list[int] = []

    def summarise(messages, context):
        summarised.append(len(messages))
        return f"pages read so far: {sum(m.role == 'tool' for m in messages)}"

    agents = {
        "pager": lambda: paging_agent(6, seen),
        "summarizer": lambda: SummarizingAgent(ScriptedModel(summarise)),
    }
    policy = Summarize(max_messages=8, keep_turns=1)
    handle, result, state = await run(agent_client, agents, 6, compaction=policy)

    assert result.output == "done"
    assert summarised and len(await turn_activities(handle)) == 7  # no activity of its own
    thread = state.session.thread
    notes = [m for m in thread.messages if "Summary of the earlier" in m.text]
    assert len(notes) == len(summarised) and "pages read so far" in notes[-1].text
    assert notes[-1] in thread.visible() and len(thread.visible()) < len(thread.messages)
    # The summarizer's model calls are counted in the run's usage.
    assert result.usage.requests == 7 + len(summarised)


async def test_a_long_execution_continues_as_new_and_carries_on_where_it_was(
    agent_client: AgentClient,
):
    seen: list[int] = []
    handle, result, state = await run(
        agent_client,
        {"pager": lambda: paging_agent(8, seen)},
        8,
        continue_as_new_after_turns=3,
        compaction=KeepLastTurns(max_messages=7, turns=2),
    )

    assert result.output == "done" and result.turns == 9
    assert len(seen) == 9  # no turn ran twice across the new workflow runs
    assert state.execution is not None and state.execution.step_count == 9
    first = await agent_client.temporal.get_workflow_handle(
        handle.id, run_id=handle.temporal_run_id
    ).describe()
    assert first.status == WorkflowExecutionStatus.CONTINUED_AS_NEW
    runs = [w async for w in agent_client.temporal.list_workflows(f"WorkflowId = '{handle.id}'")]
    assert len(runs) == 3
