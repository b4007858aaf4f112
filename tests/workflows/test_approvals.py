"""Human in the loop: approvals, questions, durable tools, cancelling a run."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError

from ratchet.agents import Agent, Result, RunContext, ScriptedModel, Thread, ToolCallingAgent, tool
from ratchet.client import AgentClient, AgentStatus
from ratchet.errors import DecisionError
from ratchet.types import Message
from ratchet.wire import RunOptions
from ratchet.worker import build_worker

from ..history import events, of_type
from ..hitl_agents import HEARTBEAT_WITH_MARGIN, Blocker, Ledger, payment_agent

SCHEDULED = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED


def tool_history(history) -> list[str]:
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in of_type(history, SCHEDULED)
    ]


async def test_approved_call_runs_as_its_own_activity_after_a_durable_wait(
    agent_client: AgentClient,
):
    ledger = Ledger()
    first = ScriptedModel.calls(
        ("pay", {"to": "acme", "amount": 500}), ("lookup", {"name": "acme"})
    )
    agent = payment_agent(ledger, [first])
    async with build_worker(agent_client, {"pay": agent}):
        handle = await agent_client.start_run("pay", "pay acme 500")
        pending = await handle.wait_for_pending()
        waiting = await handle.record()
        description = await handle.workflow.describe()
        assert ledger.payments == [] and ledger.lookups == ["acme"]
        decision = await handle.approve(pending[0].action.id, by="alice")
        result = await handle.result()
        history = await events(handle)
        decisions = await handle.decisions()
    assert [p.action.kind for p in pending] == ["approval"]
    assert pending[0].action.call.name == "pay" and pending[0].turn == 1
    assert waiting.status == AgentStatus.AWAITING_APPROVAL
    # Waiting holds no worker slot: no activity is scheduled or running.
    assert list(description.raw_description.pending_activities) == []
    assert decision.approved and decision.by == "alice"
    assert ledger.payments == [("acme", 500, 1)]
    assert result.output == "done: acme: IBAN NL00 | paid 500 to acme"
    assert tool_history(history) == ["ratchet.turn", "ratchet.tool", "ratchet.turn"]
    assert [d.id for d in decisions] == [pending[0].action.id]


async def test_rejected_call_is_not_run_and_the_model_reads_the_reason(
    agent_client: AgentClient,
):
    ledger = Ledger()
    agent = payment_agent(ledger, [ScriptedModel.call("pay", to="mallory", amount=900)])
    async with build_worker(agent_client, {"pay": agent}):
        handle = await agent_client.start_run("pay", "pay mallory")
        (pending,) = await handle.wait_for_pending()
        await handle.reject(pending.action.id, "not a known payee", by="bob")
        result = await handle.result()
    assert ledger.payments == []
    assert result.output == (
        "done: The user rejected this call: not a known payee. It was not run."
    )


async def test_small_payments_skip_approval_by_the_tools_rule(agent_client: AgentClient):
    ledger = Ledger()
    agent = payment_agent(ledger, [ScriptedModel.call("pay", to="cafe", amount=4)])
    async with build_worker(agent_client, {"pay": agent}):
        result = await agent_client.run("pay", "buy coffee")
    assert ledger.payments == [("cafe", 4, 1)]
    assert result.output == "done: paid 4 to cafe"


async def test_unknown_decided_and_mismatched_ids_are_refused_by_the_validator(
    agent_client: AgentClient,
):
    ledger = Ledger()
    calls = ScriptedModel.calls(
        ("pay", {"to": "a", "amount": 200}),
        ("pay", {"to": "b", "amount": 300}),
        ("ask_user", {"question": "Which currency?"}),
    )
    agent = payment_agent(ledger, [calls])
    async with build_worker(agent_client, {"pay": agent}):
        handle = await agent_client.start_run("pay", "pay both")
        pending = await handle.wait_for_pending()
        ids = [p.action.id for p in pending]
        with pytest.raises(DecisionError, match="no pending call or question 'call_nope'"):
            await handle.approve("call_nope")
        await handle.approve(ids[0])
        with pytest.raises(DecisionError, match="already approved"):
            await handle.reject(ids[0], "changed my mind")
        with pytest.raises(DecisionError, match="answer it with provide_input"):
            await handle.approve(ids[2])
        with pytest.raises(DecisionError, match="approve or reject it"):
            await handle.provide_input(ids[1], "EUR")
        assert [p.action.id for p in await handle.pending()] == ids[1:]
        await handle.reject(ids[1])
        await handle.provide_input(ids[2], "EUR")
        result = await handle.result()
    assert ledger.payments == [("a", 200, 1)]
    assert result.output == (
        "done: paid 200 to a | The user rejected this call. It was not run. | EUR"
    )


async def test_undecided_calls_are_rejected_when_the_approval_timeout_fires(
    agent_client: AgentClient,
):
    ledger = Ledger()
    agent = payment_agent(ledger, [ScriptedModel.call("pay", to="acme", amount=700)])
    options = RunOptions(approval_timeout=timedelta(seconds=1))
    async with build_worker(agent_client, {"pay": agent}):
        handle = await agent_client.start_run("pay", "pay", options=options)
        result = await handle.result()
        decisions = await handle.decisions()
    assert ledger.payments == []
    assert result.output == (
        "done: Not run: nobody decided within 1 s."  # not "the user rejected" it
    )
    assert [(d.approved, d.by) for d in decisions] == [(False, "timeout")]


async def test_ask_user_waits_for_an_answer_that_becomes_the_tool_result(
    agent_client: AgentClient,
):
    ledger = Ledger()
    agent = payment_agent(ledger, [ScriptedModel.call("ask_user", question="Which city?")])
    async with build_worker(agent_client, {"pay": agent}):
        handle = await agent_client.start_run("pay", "plan a trip")
        (pending,) = await handle.wait_for_pending()
        status = (await handle.record()).status
        await handle.provide_input(pending.action.id, "Lisbon")
        result = await handle.result()
    assert pending.action.question == "Which city?"
    assert status == AgentStatus.AWAITING_INPUT
    assert result.output == "done: Lisbon"


class Greeter(Agent):
    """Asks for a name with ``request_input`` and greets with the answer."""

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        if context.turn == 1:
            context.request_input("What is your name?")
            return Result()
        return Result(final_response=Message.assistant(f"Hello, {messages[-1].text}!"))


async def test_request_input_answer_arrives_as_a_user_message(agent_client: AgentClient):
    async with build_worker(agent_client, {"greeter": Greeter()}):
        handle = await agent_client.start_run("greeter", "hi")
        (pending,) = await handle.wait_for_pending()
        await handle.provide_input(pending.action.id, "Ada", by="ada")
        result = await handle.result()
        thread = (await handle.record()).session.thread
    assert result.output == "Hello, Ada!"
    assert [(m.role, m.text) for m in thread.messages] == [
        ("user", "hi"),
        ("user", "Ada"),
        ("assistant", "Hello, Ada!"),
    ]


async def test_durable_tool_retries_as_its_own_activity_and_never_runs_twice(
    agent_client: AgentClient,
):
    ledger = Ledger()
    failures = iter([RuntimeError("bank offline")])

    @tool(durable=True, max_attempts=3)
    async def transfer(amount: int, context: RunContext) -> str:
        """Move money."""
        ledger.attempts.append(context.attempt)
        error = next(failures, None)
        if error:
            raise error
        return f"moved {amount}"

    flaky_turn = iter([RuntimeError("model hiccup")])

    def script(messages: Sequence[Message], context: RunContext) -> Message | str:
        if not any(m.role == "tool" for m in messages):
            return ScriptedModel.call("transfer", amount=5)
        error = next(flaky_turn, None)
        if error:  # the turn after the transfer fails once and is retried
            raise error
        return "ok: " + messages[-1].text

    agent = ToolCallingAgent(ScriptedModel(script), [transfer])
    options = RunOptions(initial_retry_interval=timedelta(milliseconds=50))
    async with build_worker(agent_client, {"mover": agent}):
        handle = await agent_client.start_run("mover", "move 5", options=options)
        result = await handle.result()
        history = await events(handle)
    assert result.output == "ok: moved 5"
    assert ledger.attempts == [1, 2]
    assert tool_history(history) == ["ratchet.turn", "ratchet.tool", "ratchet.turn"]


async def test_cancelling_a_run_reaches_the_turn_in_flight(agent_client: AgentClient):
    agent = Blocker()
    options = RunOptions(heartbeat_timeout=HEARTBEAT_WITH_MARGIN)
    async with build_worker(agent_client, {"blocker": agent}):
        handle = await agent_client.start_run("blocker", "block", options=options)
        await agent.blocked.wait()
        await handle.cancel()
        with pytest.raises(WorkflowFailureError):
            await handle.workflow.result()
        description = await handle.workflow.describe()
    assert agent.cancelled == [2]
    assert description.status.name == "CANCELED"


async def test_a_24_hour_approval_timeout_is_a_durable_timer_in_history(
    agent_client: AgentClient,
):
    # The time-skipping test server cannot be downloaded here, so the 24 h timer is
    # checked as recorded (the 1 s test above checks what happens when one fires).
    ledger = Ledger()
    agent = payment_agent(ledger, [ScriptedModel.call("pay", to="acme", amount=700)])
    options = RunOptions(approval_timeout=timedelta(hours=24))
    async with build_worker(agent_client, {"pay": agent}):
        handle = await agent_client.start_run("pay", "pay", options=options)
        (pending,) = await handle.wait_for_pending()
        timers = of_type(await events(handle), EventType.EVENT_TYPE_TIMER_STARTED)
        await handle.approve(pending.action.id)
        await handle.result()
        cancelled = of_type(await events(handle), EventType.EVENT_TYPE_TIMER_CANCELED)
    assert pending.deadline - pending.waiting_since == timedelta(hours=24)
    (timer,) = timers
    assert timer.timer_started_event_attributes.start_to_fire_timeout.ToTimedelta() == timedelta(
        hours=24
    )
    assert len(cancelled) == 1  # the decision came first: the timer was cancelled
    assert ledger.payments == [("acme", 700, 1)]


async def test_results_waiting_for_the_next_turn_survive_continue_as_new(
    agent_client: AgentClient,
):
    @tool(durable=True)
    async def tick(n: int) -> str:
        """Count."""
        return f"tick {n}"

    def script(messages: Sequence[Message], context: RunContext) -> Message | str:
        done = [m.text for m in messages if m.role == "tool"]
        return ScriptedModel.call("tick", n=len(done) + 1) if len(done) < 3 else " / ".join(done)

    agent = ToolCallingAgent(ScriptedModel(script), [tick])
    options = RunOptions(continue_as_new_after_turns=1)
    async with build_worker(agent_client, {"ticker": agent}):
        handle = await agent_client.start_run("ticker", "count", options=options)
        result = await handle.result()
        first = agent_client.temporal.get_workflow_handle(
            handle.id, run_id=handle.workflow.first_execution_run_id
        )
        last = [e async for e in first.fetch_history_events()][-1]
    assert result.output == "tick 1 / tick 2 / tick 3"
    assert last.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
