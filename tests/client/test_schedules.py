"""Scheduled agents on Temporal Schedules (``AgentClient.schedule``): runs of an
agent, and messages to a session, each once per firing. The dev server does not
skip time for schedules, so firings come from backfills, triggers and a 1-second
interval."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from temporalio.client import (
    ScheduleBackfill,
    ScheduleHandle,
    ScheduleOverlapPolicy,
    WorkflowExecutionStatus,
    WorkflowFailureError,
)
from temporalio.common import SearchAttributeKey
from temporalio.exceptions import ApplicationError

from ratchet.agents import ScriptedModel, ToolCallingAgent, tool
from ratchet.client import AgentClient, schedule_runs_query
from ratchet.errors import InvalidInputError
from ratchet.wire import RunResult
from ratchet.wire._schedule_data import ScheduledMessage
from ratchet.worker import build_worker
from ratchet.workflows import ScheduledSendWorkflow
from ratchet.workflows._scheduled_send import DELIVERY_ATTEMPTS

from ..history import until

SCHEDULED_AT = SearchAttributeKey.for_datetime("TemporalScheduledStartTime")
DAILY = "0 7 * * *"


def reporter() -> ToolCallingAgent:
    return ToolCallingAgent(ScriptedModel(["report"] * 20))


async def runs(client: AgentClient, schedule_id: str, count: int) -> list:
    """The schedule's runs once ``count`` have closed, oldest scheduled time first."""

    async def listed() -> list:
        found = [w async for w in client.temporal.list_workflows(schedule_runs_query(schedule_id))]
        return [w for w in found if w.status != WorkflowExecutionStatus.RUNNING]

    closed = await until(listed, lambda found: len(found) >= count)
    return sorted(closed, key=lambda w: w.typed_search_attributes.get(SCHEDULED_AT))


async def backfill_three_days(handle: ScheduleHandle) -> None:
    now = datetime.now(UTC)
    await handle.backfill(
        ScheduleBackfill(
            start_at=now - timedelta(days=3),
            end_at=now,
            overlap=ScheduleOverlapPolicy.BUFFER_ALL,  # one after the other, in order
        )
    )


async def test_a_daily_schedule_backfilled_over_three_days_runs_three_times_in_order(
    agent_client: AgentClient,
):
    async with build_worker(agent_client, {"reporter": reporter()}):
        handle = await agent_client.schedule(
            f"morning-{agent_client.task_queue}", "Write the report", agent="reporter", cron=DAILY
        )
        await backfill_three_days(handle)
        done = await runs(agent_client, f"morning-{agent_client.task_queue}", 3)
        await handle.delete()
    assert [w.status for w in done] == [WorkflowExecutionStatus.COMPLETED] * 3
    scheduled = [w.typed_search_attributes.get(SCHEDULED_AT) for w in done]
    assert [t.hour for t in scheduled] == [7, 7, 7]
    assert [b - a for a, b in zip(scheduled, scheduled[1:], strict=False)] == [
        timedelta(days=1)
    ] * 2
    starts = [w.start_time for w in done]
    assert starts == sorted(starts)  # ran in the order they were scheduled
    get = agent_client.temporal.get_workflow_handle
    handles = [get(w.id, result_type=RunResult) for w in done]
    results = [await h.result() for h in handles]
    assert [r.final_response.text for r in results] == ["report"] * 3


async def test_an_interval_faster_than_the_run_skips_firings_while_it_runs(
    agent_client: AgentClient,
):
    release = asyncio.Event()

    @tool
    async def slow_step() -> str:
        """A step that takes longer than the schedule's interval."""
        await release.wait()
        return "done"

    def slow() -> ToolCallingAgent:
        script = [ScriptedModel.calls(("slow_step", {})), "finished"] * 10
        return ToolCallingAgent(ScriptedModel(script), [slow_step])

    async with build_worker(agent_client, {"slow": slow()}):
        handle = await agent_client.schedule(
            f"every-second-{agent_client.task_queue}",
            "go",
            agent="slow",
            every=timedelta(seconds=1),
        )
        described = await until(handle.describe, lambda d: d.info.num_actions_skipped_overlap >= 2)
        assert len(described.info.running_actions) == 1  # the others were skipped, not queued
        await handle.pause(note="test over")
        release.set()
        await runs(
            agent_client, f"every-second-{agent_client.task_queue}", described.info.num_actions
        )
        await handle.delete()


async def test_a_paused_schedule_fires_when_triggered_and_says_why_it_is_paused(
    agent_client: AgentClient,
):
    async with build_worker(agent_client, {"reporter": reporter()}):
        handle = await agent_client.schedule(
            f"nightly-{agent_client.task_queue}",
            "Triage",
            agent="reporter",
            cron="0 2 * * *",
            paused=True,
            note="not yet",
        )
        state = (await handle.describe()).schedule.state
        assert (state.paused, state.note) == (True, "not yet")
        await handle.trigger()
        [run] = await runs(agent_client, f"nightly-{agent_client.task_queue}", 1)
        assert run.status == WorkflowExecutionStatus.COMPLETED
        await handle.unpause()
        assert (await handle.describe()).schedule.state.paused is False
        await handle.delete()


async def test_a_session_gets_its_scheduled_messages_in_order_once_each(
    agent_client: AgentClient,
):
    async with build_worker(agent_client, {"reporter": reporter()}):
        session = await agent_client.start_session("reporter")
        handle = await agent_client.schedule(
            f"standup-{agent_client.task_queue}", "Anything new?", session=session.id, cron=DAILY
        )
        await backfill_three_days(handle)
        firings = await runs(agent_client, f"standup-{agent_client.task_queue}", 3)
        # A firing delivered again (same workflow id, so the same request id) is not
        # a new message: the session answers it with the first delivery's outcome.
        again = await agent_client.temporal.execute_workflow(
            ScheduledSendWorkflow.run,
            ScheduledMessage(session_id=session.id, prompt="Anything new?"),
            id=firings[0].id,
            task_queue=agent_client.task_queue,
        )
        thread = await until(
            session.thread, lambda t: sum(m.role == "assistant" for m in t.messages) == 3
        )
        await handle.delete()
        await session.close()
    asked = [m for m in thread.messages if m.role == "user"]
    assert [m.content for m in asked] == ["Anything new?"] * 3
    assert [m.id for m in asked] == [f"msg-{w.id}" for w in firings]  # scheduled order
    assert again == firings[0].id


async def test_a_message_scheduled_to_a_closed_session_pauses_its_schedule(
    agent_client: AgentClient,
):
    async with build_worker(agent_client, {"reporter": reporter()}):
        session = await agent_client.start_session("reporter")
        handle = await agent_client.schedule(
            f"ping-{agent_client.task_queue}",
            f"ping-{agent_client.task_queue}",
            session=session.id,
            cron=DAILY,
        )
        await session.close()
        await handle.trigger()
        [firing] = await runs(agent_client, f"ping-{agent_client.task_queue}", 1)
        state = (await handle.describe()).schedule.state
        await handle.delete()
    assert firing.status == WorkflowExecutionStatus.FAILED
    assert (
        state.paused
        and state.note == f"Ratchet: session {session.id} is closed; delete this schedule"
    )


async def test_a_schedule_of_an_agent_no_worker_hosts_pauses_after_its_first_failed_run(
    agent_client: AgentClient,
):
    schedule_id = f"typo-{agent_client.task_queue}"
    async with build_worker(agent_client, {"reporter": reporter()}):
        handle = await agent_client.schedule(schedule_id, "Report", agent="reproter", cron=DAILY)
        await handle.trigger()
        [run] = await runs(agent_client, schedule_id, 1)
        state = (await handle.describe()).schedule.state
        failed = agent_client.temporal.get_workflow_handle(run.id, result_type=RunResult)
        with pytest.raises(WorkflowFailureError) as raised:
            await failed.result()
        await handle.delete()
    assert run.status == WorkflowExecutionStatus.FAILED
    assert state.paused and state.note == (
        f"Ratchet: no worker on task queue {agent_client.task_queue} hosts agent reproter "
        "(its runs fail); host it, or delete this schedule and make one that names a "
        "hosted agent, then unpause"
    )
    error: BaseException | None = raised.value
    while error is not None and not isinstance(error, ApplicationError):
        error = error.__cause__ or getattr(error, "cause", None)
    cause = str(error)  # the turn's failure, which failed the run
    assert 'Agent "reproter" is not registered' in cause
    assert cause.endswith(f"Its schedule {schedule_id} is paused.")


async def test_a_schedule_to_a_session_with_a_long_id_pauses_when_it_closes_and_gives_up(
    agent_client: AgentClient,
):
    # Temporal takes ids of up to 1000 characters, and notes of up to 1000 bytes: the
    # notes that name such a session are cut to fit, and its delivery retries a while.
    long_id = f"session-{agent_client.task_queue}-".ljust(975, "x")
    async with build_worker(agent_client, {"reporter": reporter()}):
        session = await agent_client.start_session("reporter", session_id=long_id)
        schedule_id = f"long-{agent_client.task_queue}"
        handle = await agent_client.schedule(schedule_id, "ping", session=long_id, cron=DAILY)
        await session.close()
        await handle.trigger()
        async with asyncio.timeout(60):  # a delivery that retries for ever never ends
            [firing] = await runs(agent_client, schedule_id, 1)
        state = (await handle.describe()).schedule.state
        history = await agent_client.temporal.get_workflow_handle(firing.id).fetch_history()
        await handle.delete()
    assert firing.status == WorkflowExecutionStatus.FAILED
    note = state.note or ""
    assert state.paused and note.startswith(f"Ratchet: session {long_id[:900]}")
    assert note.endswith("… is closed; delete this schedule")
    assert len(note.encode()) <= 1000
    [scheduled] = [
        e.activity_task_scheduled_event_attributes
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert scheduled.retry_policy.maximum_attempts == DELIVERY_ATTEMPTS


async def test_a_schedule_is_refused_before_it_is_made_when_it_cannot_work(
    agent_client: AgentClient,
):
    with pytest.raises(InvalidInputError, match="one of the two"):
        await agent_client.schedule("x", "hi", agent="reporter")
    with pytest.raises(InvalidInputError, match="one, not both"):
        await agent_client.schedule("x", "hi", cron=DAILY)
    with pytest.raises(InvalidInputError, match="no session 'nope'"):
        await agent_client.schedule("x", "hi", session="nope", cron=DAILY)
    with pytest.raises(InvalidInputError, match="Temporal refused schedule 'x'"):
        await agent_client.schedule("x", "hi", agent="reporter", cron="every tuesday-ish")
    handle = await agent_client.schedule(
        f"twice-{agent_client.task_queue}", "hi", agent="reporter", cron=DAILY, paused=True
    )
    with pytest.raises(InvalidInputError, match="exists already"):
        await agent_client.schedule(
            f"twice-{agent_client.task_queue}", "hi", agent="reporter", cron=DAILY
        )
    await handle.delete()
