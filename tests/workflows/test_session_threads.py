"""Thread features inside sessions: compaction, Responses cursors, continue-as-new
by reference, and forks across all three. Every session here runs its messages in
its own workflow."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from temporalio.api.enums.v1 import EventType

from ratchet.agents import (
    Agent,
    OpenAIResponsesModel,
    Result,
    RunContext,
    ScriptedModel,
    Thread,
    ToolCallingAgent,
)
from ratchet.agents._compaction import KeepLastTurns, Summarize, SummarizingAgent
from ratchet.client import AgentClient
from ratchet.testing import OpenAIServer
from ratchet.types import Message
from ratchet.wire import RunOptions, SessionOptions
from ratchet.worker import build_worker

from .test_sessions import chain_length


class Recorder(Agent):
    """Answers with the texts it was shown, and records every thread it saw."""

    def __init__(self, pad: int = 0) -> None:
        self.seen: list[list[str]] = []
        self.pad = pad

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        self.seen.append([m.text for m in thread.messages])
        reply = f"re {messages[-1].text}" + "." * self.pad
        return Result(final_response=Message.assistant(reply))


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


async def test_a_session_compacts_what_the_model_sees_and_forks_on_either_side(
    agent_client: AgentClient,
):
    recorder = Recorder()
    options = SessionOptions(compaction=KeepLastTurns(max_messages=6, turns=2))
    async with build_worker(agent_client, {"rec": recorder}):
        session = await agent_client.start_session("rec", options=options)
        for i in range(6):
            await session.send(f"m{i}")
        thread = await session.thread()
        before = await agent_client.fork(session.id, at_turn=2)
        after = await agent_client.fork(session.id, at_turn=6)
        await before.send("b")
        await after.send("a")
        before_thread = await before.thread()
        after_thread = await after.thread()
    # Send 5 compacted: the pinned task and the last two turns; send 6 saw 6, not 12.
    assert recorder.seen[5] == ["m0", "m3", "re m3", "m4", "re m4", "m5"]
    assert len(thread.messages) == 12  # the log keeps everything
    assert [m.text for m in thread.visible()] == ["m0", "m3", "re m3", "m4", "re m4", "m5", "re m5"]
    # A fork before the compaction sees the whole early thread; one after, the view.
    assert recorder.seen[6] == ["m0", "re m0", "m1", "re m1", "b"]
    assert recorder.seen[7] == ["m0", "m5", "re m5", "a"]  # compacted again: 7 > 6
    assert [m.text for m in before_thread.visible()][-2:] == ["b", "re b"]
    assert len(after_thread.messages) == 14  # the source's 12 by reference, then its own


async def test_summarize_compaction_runs_inside_the_turn_and_keeps_the_log(
    agent_client: AgentClient,
):
    recorder = Recorder()
    summariser = SummarizingAgent(ScriptedModel(lambda messages, context: "gist"))
    policy = Summarize(max_messages=5, keep_turns=1)
    options = SessionOptions(run=RunOptions(compaction=policy))
    async with build_worker(agent_client, {"rec": recorder, "summarizer": summariser}):
        session = await agent_client.start_session("rec", options=options)
        for i in range(4):
            await session.send(f"m{i}")
        thread = await session.thread()
    summary = next(m for m in thread.messages if m.text.startswith("[Summary"))
    assert "gist" in summary.text
    assert recorder.seen[3][0] == "m0" and recorder.seen[3][1] == summary.text
    assert recorder.seen[3][-1] == "m3"
    assert [m.text for m in thread.messages if not m.text.startswith("[")][:2] == ["m0", "re m0"]


async def test_a_responses_session_carries_its_cursor_across_sends_continue_as_new_and_forks(
    agent_client: AgentClient, server: OpenAIServer
):
    ids = [server.response(f"answer {i}") for i in range(5)]
    model = OpenAIResponsesModel("gpt-test", base_url=server.base_url, api_key="k")
    agent = ToolCallingAgent(model, [], instructions="Be brief.")
    options = SessionOptions(
        run=RunOptions(thread_kind="openai.responses"), continue_as_new_after_runs=3
    )
    async with build_worker(agent_client, {"oa": agent}):
        session = await agent_client.start_session("oa", options=options)
        for i in range(4):  # the fourth send runs after a continue-as-new
            await session.send(f"q{i}")
        fork = await agent_client.fork(session.id, at_turn=2)
        await fork.send("forked")
        runs = await chain_length(agent_client, session.id, session.first_temporal_run_id)
    await model.client.close()
    bodies = [r.body for r in server.requests]
    assert "previous_response_id" not in bodies[0]
    assert [b.get("previous_response_id") for b in bodies[1:4]] == ids[:3]
    assert runs == 2
    assert bodies[4]["previous_response_id"] == ids[1]  # the fork continues after turn 2
    assert bodies[4]["input"][-1]["content"] == "forked"


async def test_a_session_past_two_megabytes_continues_as_new_by_reference(
    agent_client: AgentClient,
):
    pad = 60_000
    options = SessionOptions(continue_as_new_after_runs=10)
    async with build_worker(agent_client, {"rec": lambda: Recorder(pad=pad)}):
        session = await agent_client.start_session("rec", options=options)
        for i in range(40):  # 40 × 60 kB answers: 2.4 MB of thread
            await session.send(f"m{i}")
        started = [
            e.workflow_execution_started_event_attributes.input.payloads[0].ByteSize()
            async for e in session.workflow.fetch_history_events()
            if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED
        ]
    fresh = Recorder(pad=pad)  # a worker that has never seen the session
    async with build_worker(agent_client, {"rec": lambda: fresh}):
        await session.send("after")
        thread = await session.thread()
    assert started and started[0] < 64 * 1024  # the latest run's input: no thread in it
    assert len(thread.messages) == 82
    assert [m.text for m in thread.messages[0::2]] == [*(f"m{i}" for i in range(40)), "after"]
    assert len(fresh.seen[0]) == 81  # it paged in every earlier message
