"""What an operator sees: search attributes, UI metadata, named queries, live events."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, WorkflowExecution

from ratchet.agents import (
    Agent,
    ModelPrice,
    Result,
    RunContext,
    ScriptedModel,
    Thread,
    ToolCallingAgent,
    tool,
)
from ratchet.client import AgentClient, AgentStatus, CustomEvent, TurnCompleted
from ratchet.client._event_reader import read_events
from ratchet.deploy import replay
from ratchet.types import Message, RunEvent
from ratchet.wire import AGENT_COST_USD, AGENT_NAME, AGENT_SESSION_ID, AGENT_STATUS, AGENT_TURNS
from ratchet.worker import build_worker

from ..history import events, of_type
from ..hitl_agents import Ledger, payment_agent
from ..web_agents import WRITER_WORDS, Writer

PRICE = ModelPrice(input_per_million=3.0, output_per_million=15.0)


async def listed(client: Client, query: str, count: int = 1) -> list[WorkflowExecution]:
    """Visibility is eventually consistent: poll until ``count`` workflows match."""
    deadline = time.monotonic() + 30
    while True:
        found = [w async for w in client.list_workflows(query)]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.2)


def weather_agent(*, stream: bool = False) -> Agent:
    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    model = ScriptedModel(
        [ScriptedModel.call("weather", city="Oslo"), "It is sunny in Oslo today."],
        price=PRICE,
        stream=stream,
    )
    return ToolCallingAgent(model, tools=[weather])


async def test_a_finished_run_is_indexed_with_its_status_turns_tokens_and_cost(
    agent_client: AgentClient, task_queue: str
):
    async with build_worker(agent_client, {"weather": weather_agent()}):
        handle = await agent_client.start_run("weather", f"weather in Oslo? {task_queue}")
        result = await handle.result()
        description = await handle.workflow.describe()
        state = await handle.record()
        thread = await handle.workflow.query("thread")
        execution = await handle.workflow.query("execution")
        pending = await handle.workflow.query("pending")
    query = f'AgentName = "weather" AND AgentStatus = "COMPLETED" AND WorkflowId = "{handle.id}"'
    found = await listed(agent_client.temporal, query)
    assert [w.id for w in found] == [handle.id]
    attributes = found[0].typed_search_attributes
    by_name = {pair.key.name: pair.value for pair in attributes}
    assert by_name["AgentTurns"] == result.turns == 2
    assert by_name["AgentTokens"] == result.usage.total_tokens > 0
    expected_cost = PRICE.cost(result.usage)
    assert abs(result.usage.cost_usd - expected_cost) < 1e-9 and expected_cost > 0
    assert abs(by_name["AgentCostUsd"] - expected_cost) < 1e-6
    assert by_name["AgentSessionId"] == state.session.info.id
    # The UI's summary and details, and the queries its Queries tab calls.
    summary, details = await description.static_summary(), await description.static_details()
    assert summary.startswith("weather: weather in Oslo?")
    assert "**Agent:** weather" in details and "> weather in Oslo?" in details
    assert len(thread["messages"]) == 4 and execution["status"] == "COMPLETED" and pending == []
    # Each turn's activity carries a summary the UI shows in the timeline.
    history = await events(handle)
    scheduled = of_type(history, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    summaries = [
        agent_client.temporal.data_converter.payload_converter.from_payload(e.user_metadata.summary)
        for e in scheduled
    ]
    assert len(summaries) == 2 and all(s.startswith("turn ") for s in summaries), summaries


async def test_a_visibility_query_is_built_from_the_public_search_attribute_keys(
    agent_client: AgentClient,
):
    async with build_worker(agent_client, {"weather": weather_agent()}):
        handle = await agent_client.start_run("weather", "weather in Oslo?")
        result = await handle.result()
        with pytest.warns(DeprecationWarning, match=r"handle\.state\(\) is handle\.record\(\)"):
            assert await handle.state() == await handle.record()  # 0.1.0's name, until 0.3
        state = await handle.record()
    completed = AgentStatus.COMPLETED.value
    query = (
        f'{AGENT_NAME.name} = "weather" AND {AGENT_STATUS.name} = "{completed}" '
        f'AND {AGENT_COST_USD.name} > 0 AND WorkflowId = "{handle.id}"'
    )
    [found] = await listed(agent_client.temporal, query)
    attributes = found.typed_search_attributes
    assert attributes.get(AGENT_TURNS) == result.turns == 2
    assert attributes.get(AGENT_SESSION_ID) == state.session.info.id


async def test_the_ui_filter_finds_every_session_waiting_for_approval(
    agent_client: AgentClient, task_queue: str
):
    ledger = Ledger()
    agent = payment_agent(ledger, [ScriptedModel.call("pay", to="acme", amount=500), "Paid acme."])
    async with build_worker(agent_client, {"pay": agent}):
        session = await agent_client.start_session("pay", session_id=f"pay-{task_queue}")
        send = asyncio.ensure_future(session.send("pay acme 500"))
        pending = await session.wait_for_pending()
        waiting = await listed(
            agent_client.temporal,
            f'AgentStatus = "AWAITING_APPROVAL" AND AgentSessionId = "{session.id}"',
        )
        status = await session.workflow.query("status")
        session_pending = await session.workflow.query("pending")
        metadata = await session.workflow.query(
            "__temporal_workflow_metadata", result_type=WorkflowMetadata
        )
        await session.approve(pending[0].action.id, by="oncall")
        result = await send
        running = await listed(
            agent_client.temporal,
            f'AgentStatus = "PENDING" AND WorkflowId = "{session.id}" AND AgentTurns = 2',
        )
        await session.close()
    # The session is found (its run is inside it) and says what it waits for.
    kinds = sorted(w.workflow_type for w in waiting)
    assert kinds == ["AgentSession"]
    assert status["run_status"] == "AWAITING_APPROVAL"
    assert "pay" in status["waiting_for"][0]
    assert session_pending[0]["action"]["call"]["name"] == "pay"
    assert "**Waiting for** (AWAITING_APPROVAL)" in metadata.current_details
    assert "pay" in metadata.current_details.split("Waiting for")[1]
    assert ledger.payments == [("acme", 500, 1)] and result.output == "Paid acme."
    assert [w.id for w in running] == [session.id]


class Narrator(Agent):
    """Emits its own events, then fails attempt 1 of turn 1 after emitting."""

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await context.emit({"step": "thinking", "attempt": context.attempt})
        if context.attempt == 1:
            raise RuntimeError("the first attempt fails after it has emitted")
        await context.emit(CustomEvent(text="done thinking"))
        answer = Message.assistant("narrated")
        await thread.on_new_messages([answer])
        return Result(final_response=answer)


async def collect(stream) -> list[RunEvent]:
    return [event async for event in stream]


async def test_a_run_streams_its_events_live_and_in_order(
    agent_client: AgentClient, task_queue: str
):
    async with build_worker(agent_client, {"weather": weather_agent(stream=True)}):
        handle = await agent_client.start_run("weather", "weather in Oslo?")
        seen = await collect(handle.events())
        result = await handle.result()
    kinds = [e.kind for e in seen]
    assert kinds[:3] == ["run_started", "status", "turn_started"]
    assert kinds.count("tool_call") == 1 and kinds.count("tool_result") == 1
    assert kinds.index("tool_call") < kinds.index("tool_result") < kinds.index("turn_completed")
    assert kinds[-1] == "status" and seen[-1].text == "COMPLETED"
    deltas = [e.text for e in seen if e.kind == "text_delta"]
    # One turn's deltas, coalesced within the batch interval: one event, not six words.
    assert "".join(deltas) == result.output and len(deltas) == 1
    turn_2 = [e for e in seen if e.turn == 2 and e.attempt]
    assert [e.seq for e in turn_2] == list(range(1, len(turn_2) + 1))
    completed = [e for e in seen if e.kind == "turn_completed"]
    assert [e.turn for e in completed] == [1, 2]
    assert all(isinstance(e, TurnCompleted) for e in completed)
    assert completed[0].data.tool_calls == ['weather(city="Oslo")']
    assert not completed[0].data.final and completed[1].data.final
    assert completed[1].text == result.output
    assert all(e.run_id == handle.id for e in seen)


async def test_a_retried_turn_says_so_and_nothing_is_delivered_twice(agent_client: AgentClient):
    async with build_worker(agent_client, {"narrator": Narrator()}):
        handle = await agent_client.start_run("narrator", "go")
        seen = await collect(handle.events())
        await handle.result()
    turn_events = [(e.kind, e.attempt, e.seq) for e in seen if e.attempt]
    assert turn_events == [
        ("custom", 1, 1),
        ("retry", 2, 1),
        ("custom", 2, 2),
        ("custom", 2, 3),
    ]
    keys = [(e.turn, e.attempt, e.seq) for e in seen if e.attempt]
    assert len(keys) == len(set(keys))
    # It says why the earlier attempt failed, while the turn still retries (before:
    # only that one did, and a setup error retried for minutes without a cause).
    (retry,) = [e for e in seen if e.kind == "retry"]
    assert retry.text == (
        "an earlier attempt of this turn failed: "
        "RuntimeError: the first attempt fails after it has emitted"
    )


async def test_a_session_streams_each_runs_events_between_its_start_and_finish(
    agent_client: AgentClient,
):
    replies: Sequence[str] = ["first answer", "second answer"]
    agent = ToolCallingAgent(ScriptedModel(list(replies)))
    async with build_worker(agent_client, {"chat": agent}):
        session = await agent_client.start_session("chat")
        watcher = asyncio.ensure_future(collect(session.events()))
        await session.send("one")
        await session.send("two")
        await session.close()
        seen = await watcher
        history = await events(session)
    # The watcher read by query: its polls wrote nothing to the session's history.
    updates = [
        e.workflow_execution_update_accepted_event_attributes.accepted_request.input.name
        for e in history
        if e.HasField("workflow_execution_update_accepted_event_attributes")
    ]
    assert updates == ["send", "send", "close"]
    outline = [(e.kind, e.text) for e in seen if e.kind in ("run_started", "run_finished")]
    assert outline == [
        ("run_started", "chat"),
        ("run_finished", "first answer"),
        ("run_started", "chat"),
        ("run_finished", "second answer"),
    ]
    first_run = seen[: [e.kind for e in seen].index("run_finished")]
    assert {e.run_id for e in first_run} == {f"{session.id}-run-1"}
    assert [e.kind for e in first_run][-1] == "status"


async def test_streamed_text_is_coalesced_into_one_event_per_batch_interval(
    agent_client: AgentClient,
):
    """A reply streamed a word every 50 ms for three seconds: watchers get its text
    as it comes, in a dozen or so events (one per 250 ms batch), not sixty."""
    async with build_worker(agent_client, {"writer": Writer}):
        session = await agent_client.start_session("writer")
        result = await session.send("write")
        seen = [
            event
            for _, event in await read_events(agent_client.temporal, session.id, 0, until=1 << 30)
        ]
    deltas = [e.text or "" for e in seen if e.kind == "text_delta"]
    assert "".join(deltas) + "(attempt 1)" == result.output
    assert 4 <= len(deltas) <= WRITER_WORDS // 3
    sent_by_turn = [e.seq for e in seen if e.attempt]
    assert sent_by_turn == list(range(1, len(sent_by_turn) + 1))  # in order, none missing


async def test_the_events_a_sessions_turns_send_name_their_run(agent_client: AgentClient):
    """A session's turns send their own events (streamed text, ``context.emit``):
    each names the run it belongs to, ``<session>-run-<n>``, as the workflow's do."""
    model = ScriptedModel(["first answer", "second answer"], stream=True)
    async with build_worker(agent_client, {"chat": ToolCallingAgent(model)}):
        session = await agent_client.start_session("chat")
        watcher = asyncio.ensure_future(collect(session.events()))
        await session.send("one")
        await session.send("two")
        await session.close()
        seen = await watcher
        history = await session.workflow.fetch_history()
    sent_by_turns = [(e.kind, e.run_id) for e in seen if e.attempt]
    assert ("text_delta", f"{session.id}-run-1") in sent_by_turns
    assert ("text_delta", f"{session.id}-run-2") in sent_by_turns
    runs = [e.run_id for e in seen if e.kind == "run_started"]
    assert {run_id for _, run_id in sent_by_turns} <= set(runs), sent_by_turns
    assert (await replay([history])).ok  # the session's turns are told their run behind a patch
