"""AgentSessionWorkflow: long-lived sessions whose messages run in the session itself."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.api.enums.v1 import EventType

from ratchet.agents import Agent, Result, RunContext, ScriptedModel, Thread, ToolCallingAgent, tool
from ratchet.client import AgentClient, AgentStatus
from ratchet.errors import (
    DecisionError,
    InvalidInputError,
    RunFailedError,
    SessionBusyError,
    SessionClosedError,
    UsageError,
)
from ratchet.types import Message
from ratchet.wire import RunOptions, SessionOptions
from ratchet.worker import build_worker

from ..history import events, until
from ..hitl_agents import HEARTBEAT_WITH_MARGIN, Blocker, Ledger, payment_agent


class Echo(Agent):
    """Answers with what it has seen; counts its visits in state. ``notes`` extra
    assistant messages per run make threads grow faster. "fail" fails the run;
    while ``gate`` is set, a run waits for it."""

    def __init__(self, notes: int = 0) -> None:
        self.notes = notes
        self.started = asyncio.Event()
        self.gate: asyncio.Event | None = None

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        text = messages[-1].text
        if text == "fail":
            raise UsageError("asked to fail")
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        visits = context.state.get("visits", 0) + 1
        context.state.update("visits", visits)
        for i in range(self.notes):
            await thread.on_new_messages([Message.assistant(f"note {i} on {text}")])
        reply = f"#{visits} {text} (saw {len(thread.messages)})"
        return Result(final_response=Message.assistant(reply))


async def chain_length(client: AgentClient, workflow_id: str, run_id: str | None) -> int:
    """How many workflow runs a continue-as-new chain has, following it from ``run_id``."""
    count = 0
    while run_id:
        count += 1
        handle = client.temporal.get_workflow_handle(workflow_id, run_id=run_id)
        last = [e async for e in handle.fetch_history_events()][-1]
        attributes = last.workflow_execution_continued_as_new_event_attributes
        run_id = (
            attributes.new_execution_run_id
            if last.HasField("workflow_execution_continued_as_new_event_attributes")
            else None
        )
    return count


async def test_each_message_runs_in_the_session_and_is_written_to_history_once(
    agent_client: AgentClient,
):
    async with build_worker(agent_client, {"echo": Echo}):
        session = await agent_client.start_session("echo")
        results = [await session.send(f"unique-{i}-text") for i in range(3)]
        outputs = [result.output for result in results]
        thread = await session.thread()
        state = await session.record()
        status = await session.status()
        history = await events(session)
        exported = await session.export_state()
    assert outputs == [
        "#1 unique-0-text (saw 1)",
        "#2 unique-1-text (saw 3)",
        "#3 unique-2-text (saw 5)",
    ]
    assert [m.text for m in thread.messages] == [
        "unique-0-text",
        outputs[0],
        "unique-1-text",
        outputs[1],
        "unique-2-text",
        outputs[2],
    ]
    assert state.execution is None and state.status.value == "PENDING"
    assert (status.status, status.runs) == ("PENDING", 3)
    # A send's result names the session; its history holds only what the client
    # cannot know (no session id, no thread end) and a small answer, which spares the
    # client a billed query to read it back.
    assert all(r.session_id == session.id and r.workflow_id == session.id for r in results)
    completed = [
        e.workflow_execution_update_completed_event_attributes.outcome.success.payloads[0].data
        for e in history
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED
    ]
    assert len(completed) == 3
    assert not any(b"session_id" in c or b"thread_end" in c for c in completed)
    assert all(output.encode() in c for output, c in zip(outputs, completed, strict=True))
    # No child workflows; each message is in the session's history once: the user's
    # in the send Update, the answer in the result of the turn that wrote it (and, as
    # it is small, in the send's result too).
    kinds = {e.event_type for e in history}
    assert EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED not in kinds
    raw = b"".join(e.SerializeToString() for e in history)
    for text in ["unique-0-text", "unique-2-text"]:
        assert raw.count(f'"{text}"'.encode()) == 1, text
    for text in outputs:
        assert raw.count(f'"{text}"'.encode()) == 2, text
    assert exported["agents"][0]["entries"]["visits"]["data"] == 3


async def test_a_session_continues_as_new_and_keeps_its_thread_and_state(
    agent_client: AgentClient,
):
    options = SessionOptions(continue_as_new_after_runs=4)
    async with build_worker(agent_client, {"echo": lambda: Echo(notes=3)}):
        session = await agent_client.start_session("echo", options=options)
        for i in range(50):
            await session.send(f"m{i}")
        thread = await session.thread()
        export = await session.agent_state()
        workflow_runs = await chain_length(agent_client, session.id, session.first_temporal_run_id)
    assert len(thread.messages) == 250  # 50 × (prompt, 3 notes, answer)
    assert [m.text for m in thread.messages[0::5]] == [f"m{i}" for i in range(50)]
    assert thread.messages[-1].text == "#50 m49 (saw 249)"
    assert len({m.id for m in thread.messages}) == 250
    assert export.get("visits") == 50 and export.version("visits") == 50
    assert workflow_runs == 13  # 50 runs, continuing as new after every 4


async def test_reject_steering_refuses_a_message_while_a_run_is_in_progress(
    agent_client: AgentClient,
):
    echo = Echo()
    echo.gate = asyncio.Event()
    async with build_worker(agent_client, {"echo": lambda: echo}):
        session = await agent_client.start_session(
            "echo", options=SessionOptions(steering="reject")
        )
        first = asyncio.create_task(session.send("first"))
        await echo.started.wait()
        with pytest.raises(SessionBusyError, match="rejects messages until that run ends") as e:
            await session.send("second")
        assert isinstance(e.value, RunFailedError) and e.value.error_type == "SessionBusyError"
        echo.gate.set()
        assert (await first).output == "#1 first (saw 1)"
        assert (await session.send("third")).output == "#2 third (saw 3)"


async def test_queue_steering_runs_a_message_sent_during_a_run_next(agent_client: AgentClient):
    echo = Echo()
    echo.gate = asyncio.Event()
    async with build_worker(agent_client, {"echo": lambda: echo}):
        session = await agent_client.start_session("echo")
        first = asyncio.create_task(session.send("first"))
        await echo.started.wait()
        second = asyncio.create_task(session.send("second"))
        # The session has recorded the message and queued it behind "first".
        status = await until(session.status, lambda s: s.waiting == 1)
        assert (status.status, status.waiting) == ("RUNNING", 1)
        echo.gate.set()
        assert [(await first).output, (await second).output] == [
            "#1 first (saw 1)",
            "#2 second (saw 3)",
        ]


async def test_a_failed_run_leaves_the_session_usable_and_a_closed_one_refuses(
    agent_client: AgentClient,
):
    async with build_worker(agent_client, {"echo": Echo}):
        session = await agent_client.start_session("echo")
        await session.send("hello")
        with pytest.raises(RunFailedError, match="asked to fail") as failed:
            await session.send("fail")
        # The run's own failure, with its context (which turn of which agent) and type.
        assert "Turn 1 of agent 'echo' failed" in str(failed.value)
        assert failed.value.error_type == "UsageError"
        assert (await session.send("again")).output == "#2 again (saw 3)"
        with pytest.raises(InvalidInputError):
            await session.send("   ")
        closed = await session.close()
        assert closed.status == "CLOSED" and closed.runs == 3
        with pytest.raises(SessionClosedError, match="is closed") as e:
            await session.send("late")
        assert isinstance(e.value, RunFailedError) and e.value.error_type == "SessionClosedError"
        assert (await session.workflow.result()).status == "CLOSED"
        thread = await session.thread()
    # The failed run's message stays in the log (and in history) but left the agent's view.
    assert [m.text for m in thread.messages] == [
        "hello",
        "#1 hello (saw 1)",
        "fail",
        "again",
        "#2 again (saw 3)",
    ]
    assert [m.text for m in thread.visible()] == [
        "hello",
        "#1 hello (saw 1)",
        "again",
        "#2 again (saw 3)",
    ]


async def test_interrupt_steering_stops_the_run_and_keeps_its_finished_turns(
    agent_client: AgentClient,
):
    agent = Blocker()
    options = SessionOptions(
        steering="interrupt", run=RunOptions(heartbeat_timeout=HEARTBEAT_WITH_MARGIN)
    )
    async with build_worker(agent_client, {"blocker": agent}):
        session = await agent_client.start_session("blocker", options=options)
        first = asyncio.create_task(session.send("block"))
        await agent.blocked.wait()
        second = await session.send("go on")
        interrupted = await first
        thread = [m.text for m in (await session.thread()).messages]
    assert interrupted.status == AgentStatus.INTERRUPTED and interrupted.turns == 1
    assert agent.cancelled == [2]  # the turn in flight saw the cancellation
    assert second.output == "finished go on"
    assert thread == ["block", "step 1 of block", "go on", "step 1 of go on", "finished go on"]


async def test_stop_ends_the_run_in_progress_and_the_session_stays_usable(
    agent_client: AgentClient,
):
    agent = Blocker()
    options = SessionOptions(run=RunOptions(heartbeat_timeout=HEARTBEAT_WITH_MARGIN))
    async with build_worker(agent_client, {"blocker": agent}):
        session = await agent_client.start_session("blocker", options=options)
        first = asyncio.create_task(session.send("block"))
        await agent.blocked.wait()
        stopped = await session.stop()  # answers once the run has ended
        cancelled = await first
        after = await session.send("next")
        status = await session.status()
    assert cancelled.status == AgentStatus.CANCELLED and cancelled.output == ""
    assert agent.cancelled == [2]
    assert after.output == "finished next"
    assert (status.status, status.runs) == ("PENDING", 2)
    assert (stopped.status, stopped.runs) == ("PENDING", 1)  # was RUNNING: before the stop


async def test_approvals_through_a_session_reach_its_run_in_progress(
    agent_client: AgentClient,
):
    ledger = Ledger()
    agent = payment_agent(ledger, [ScriptedModel.call("pay", to="acme", amount=250)])
    async with build_worker(agent_client, {"pay": agent}):
        session = await agent_client.start_session("pay")
        with pytest.raises(DecisionError, match="has no run in progress"):
            await session.approve("call_0_0")
        sent = asyncio.create_task(session.send("pay acme"))
        (pending,) = await session.wait_for_pending()
        assert [p.action.id for p in await session.pending()] == [pending.action.id]
        await session.approve(pending.action.id)
        result = await sent
    assert ledger.payments == [("acme", 250, 1)]
    assert result.output == "done: paid 250 to acme"


async def test_a_session_budget_ends_runs_once_it_is_spent(agent_client: AgentClient):
    # Each Echo turn reports no usage; a scripted tool-calling agent does.
    ledger = Ledger()
    agent = payment_agent(ledger, [])
    options = SessionOptions(token_budget=40)
    async with build_worker(agent_client, {"pay": agent}):
        session = await agent_client.start_session("pay", options=options)
        spent = []
        with pytest.raises(RunFailedError) as e:
            for i in range(20):
                spent.append((await session.send(f"hello number {i}")).usage.total_tokens)
        status = await session.status()
    assert e.value.error_type == "BudgetExceededError"
    assert "token_budget of 40" in str(e.value)
    assert sum(spent) <= 40 and status.used_tokens >= 40


@tool
def again() -> str:
    """Go on."""
    return "more to do"


async def test_a_failed_runs_tokens_count_against_the_session_budget(agent_client: AgentClient):
    # A run that never answers fails at its max_turns after three model calls. Before,
    # only runs that answered counted: failing runs spent the budget again and again.
    looping = ToolCallingAgent(
        ScriptedModel(lambda messages, context: ScriptedModel.call("again")), [again]
    )
    options = SessionOptions(token_budget=1_000_000, run=RunOptions(max_turns=3))
    async with build_worker(agent_client, {"loop": looping}):
        session = await agent_client.start_session("loop", options=options)
        with pytest.raises(RunFailedError):
            await session.send("go")
        once = await session.status()
        with pytest.raises(RunFailedError):
            await session.send("go")  # the same prompt: the failed run left the view
        twice = await session.status()
        # A budget of what two failed runs spend leaves nothing for a third.
        tight = SessionOptions(token_budget=twice.used_tokens, run=RunOptions(max_turns=3))
        budgeted = await agent_client.start_session("loop", options=tight)
        for _ in range(2):
            with pytest.raises(RunFailedError):
                await budgeted.send("go")
        with pytest.raises(RunFailedError) as refused:
            await budgeted.send("go")
    assert once.used_tokens > 0 and once.turns == 0  # its turns were rolled back, not its spend
    assert twice.used_tokens == 2 * once.used_tokens
    assert refused.value.error_type == "BudgetExceededError"


async def test_interrupting_a_run_that_waits_for_approval_rejects_the_call(
    agent_client: AgentClient,
):
    ledger = Ledger()
    agent = payment_agent(ledger, [ScriptedModel.call("pay", to="acme", amount=250)])
    async with build_worker(agent_client, {"pay": agent}):
        session = await agent_client.start_session(
            "pay", options=SessionOptions(steering="interrupt")
        )
        first = asyncio.create_task(session.send("pay acme"))
        await session.wait_for_pending()
        second = await session.send("never mind")
        interrupted = await first
        thread = [(m.role, m.text) for m in (await session.thread()).messages]
    assert ledger.payments == []
    assert interrupted.status == AgentStatus.INTERRUPTED
    not_run = "Not run: the run was stopped before anyone decided."  # nobody rejected it
    assert thread[:3] == [("user", "pay acme"), ("assistant", ""), ("tool", not_run)]
    assert thread[3] == ("user", "never mind")
    assert second.output == f"done: {not_run}"
