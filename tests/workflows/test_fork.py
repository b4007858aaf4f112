"""Fork a session or a run at any turn, from the marks its workflow keeps."""

from __future__ import annotations

import asyncio

import pytest

from ratchet.agents import (
    Agent,
    KeepLastTurns,
    Result,
    RunContext,
    ScriptedModel,
    Thread,
    ToolCallingAgent,
)
from ratchet.client import AgentClient
from ratchet.errors import InvalidInputError
from ratchet.types import Message
from ratchet.wire import RunOptions
from ratchet.worker import build_worker

from ..hitl_agents import Ledger, payment_agent


class TwoStep(Agent):
    """Two turns per run, each counting itself in state: a note, then an answer."""

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        count = context.state.get("count", 0) + 1
        context.state.update("count", count)
        prompt = next(m.text for m in reversed(thread.messages) if m.role == "user")
        if messages:  # the run's first turn
            await thread.on_new_messages([Message.assistant(f"thinking about {prompt}")])
            return Result()
        return Result(final_response=Message.assistant(f"{prompt}: turn {count}"))


async def test_fork_at_turn_n_equals_the_sources_checkpoint_even_after_it_closed(
    agent_client: AgentClient,
):
    async with build_worker(agent_client, {"two": TwoStep}):
        source = await agent_client.start_session("two")
        checkpoints = []
        for word in ("alpha", "beta", "gamma"):
            await source.send(word)
            checkpoints.append(
                (
                    [m.model_dump() for m in (await source.thread()).messages],
                    await source.agent_state(),
                )
            )
        await source.close()
        source_thread = (await source.thread()).messages

        fork = await agent_client.fork(source.id, at_turn=4)  # the end of the second run
        forked_thread = (await fork.thread()).messages
        forked_state = await fork.agent_state()
        mid = await agent_client.checkpoint(source.id, at_turn=3)  # inside the second run
        by_message = await agent_client.checkpoint(source.id, at_message=source_thread[2].id)
        continued = await fork.send("delta")
        with pytest.raises(InvalidInputError, match="has 6 turns; there is no turn 9"):
            await agent_client.fork(source.id, at_turn=9)
        after = (await source.thread()).messages

    thread_at_4, state_at_4 = checkpoints[1]
    assert [m.model_dump() for m in forked_thread] == thread_at_4
    assert forked_state.get("count") == state_at_4.get("count") == 4
    assert forked_state.version("count") == state_at_4.version("count")
    assert [m.text for m in mid.messages] == [
        "alpha",
        "thinking about alpha",
        "alpha: turn 2",
        "beta",
        "thinking about beta",
    ]
    assert mid.state["count"].data == 3 and mid.agent == "two"
    assert by_message.turn == 2 and len(by_message.messages) == 3
    assert continued.output == "delta: turn 6"
    assert after == source_thread  # the source is untouched
    assert len(source_thread) == 9


async def test_fork_at_turn_zero_and_of_a_single_run(agent_client: AgentClient):
    async with build_worker(agent_client, {"two": TwoStep}):
        run = await agent_client.start_run("two", "solo")
        await run.result()
        fork = await agent_client.fork(run.id, at_turn=1)
        empty = await agent_client.checkpoint(run.id, at_turn=0)
        forked = [m.text for m in (await fork.thread()).messages]
        answer = await fork.send("next")
    assert forked == ["solo", "thinking about solo"]
    assert empty.messages == [] and empty.turn == 0
    assert answer.output == "next: turn 3"


async def test_a_fast_run_with_compaction_forks_at_any_turn_like_a_session(
    agent_client: AgentClient,
):
    options = RunOptions(fast=True, compaction=KeepLastTurns(max_messages=50, turns=10))
    async with build_worker(agent_client, {"two": TwoStep}):
        run = await agent_client.start_run("two", "solo", options=options)
        await run.result()
        fork = await agent_client.fork(run.id, at_turn=1)
        forked = [m.text for m in (await fork.thread()).messages]
        answer = await fork.send("next")
    assert forked == ["solo", "thinking about solo"]
    assert answer.output == "next: turn 3"


async def test_a_fork_gives_every_tool_call_a_result(agent_client: AgentClient):
    ledger = Ledger()
    agent = payment_agent(ledger, [ScriptedModel.call("pay", to="acme", amount=250)])
    async with build_worker(agent_client, {"pay": agent}):
        session = await agent_client.start_session("pay")
        sent = asyncio.create_task(session.send("pay acme"))
        (pending,) = await session.wait_for_pending()
        waiting = await agent_client.checkpoint(session.id)  # the run waits for approval
        await session.approve(pending.action.id)
        await sent
        settled = await agent_client.checkpoint(session.id, at_turn=1)
    assert [m.role for m in waiting.messages] == ["user", "assistant", "tool"]
    assert waiting.messages[-1].text.startswith("Not run: the session was forked")
    # After the approval the result is in the next turn's input: the fork takes it.
    assert [m.role for m in settled.messages] == ["user", "assistant", "tool"]
    assert settled.messages[-1].text == "paid 250 to acme"


async def test_a_fork_runs_on_its_sources_task_queue_whatever_the_clients(
    agent_client: AgentClient,
):
    """`ratchet sessions fork` connects with the default task queue: the fork started
    there, where no worker hosts the agent, and never ran."""
    model = ScriptedModel(["first", "second"])  # reply k: k assistant messages before
    async with build_worker(agent_client, {"echo": ToolCallingAgent(model)}):
        session = await agent_client.start_session("echo")
        await session.send("one")
        await session.send("two")
        elsewhere = AgentClient(agent_client.temporal, task_queue="some-other-queue")
        fork = await elsewhere.fork(session.id, at_turn=1)
        assert (await fork.workflow.describe()).task_queue == agent_client.task_queue
        assert (await fork.send("two again")).output == "second"
        await fork.close()
        await session.close()
