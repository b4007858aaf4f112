"""Readers of a workflow's events follow its history with the server's long poll
(ratchet.client._follow) and query only when it changed; past the per-process
limit, or where the history cannot be followed, they poll on a timer. Both ways
deliver every event once, across continue-as-new, to the close."""

from __future__ import annotations

import asyncio
from weakref import WeakKeyDictionary

import pytest
from temporalio.client import WorkflowContinuedAsNewError

from ratchet.agents import ScriptedModel, ToolCallingAgent
from ratchet.client import AgentClient
from ratchet.client import _follow as follow
from ratchet.client._follow import HistoryWatch
from ratchet.wire import SessionOptions
from ratchet.worker import build_worker

REPLIES = ["one", "two", "three"]


def chat() -> ToolCallingAgent:
    return ToolCallingAgent(ScriptedModel(list(REPLIES)))


_seen: WeakKeyDictionary[HistoryWatch, int] = WeakKeyDictionary()


async def changes(watch: HistoryWatch) -> None:
    """Returns at once the first time, then at each change after the last one seen."""
    seen = _seen.get(watch, -1)
    if seen >= 0:
        assert await watch.wait(seen, 30), "no change within 30 s"
    _seen[watch] = watch.version


@pytest.mark.parametrize("mode", ["following", "polling"])
async def test_a_session_is_followed_across_continue_as_new_to_its_close(
    agent_client: AgentClient, monkeypatch: pytest.MonkeyPatch, mode: str
):
    if mode == "polling":
        monkeypatch.setattr(follow, "LIMIT", 0)
    async with build_worker(agent_client, {"chat": chat()}):
        session = await agent_client.start_session(
            "chat", options=SessionOptions(continue_as_new_after_runs=1)
        )
        seen = []

        async def watch() -> None:
            async for event in session.events():
                seen.append(event)

        watching = asyncio.ensure_future(watch())
        for text in REPLIES:
            await session.send(text)
        await session.close()
        await asyncio.wait_for(watching, 30)  # it ends by itself once the session closed
    finished = [e.text for e in seen if e.kind == "run_finished"]
    assert finished == REPLIES
    assert [e.kind for e in seen].count("run_started") == len(REPLIES)
    assert HistoryWatch.active == 0  # every watch stopped with its reader


async def test_a_watch_wakes_at_each_change_and_sees_the_close(agent_client: AgentClient):
    async with build_worker(agent_client, {"chat": chat()}):
        session = await agent_client.start_session(
            "chat", options=SessionOptions(continue_as_new_after_runs=1)
        )
        watch = HistoryWatch(agent_client.temporal, session.id)
        try:
            assert watch.following
            await changes(watch)  # set from the start
            await session.send("one")  # the run then continues as new
            await changes(watch)
            await session.send("two")  # on the new run
            await changes(watch)
            assert not watch.closed
            await session.close()
            while not watch.closed:
                await changes(watch)
        finally:
            watch.close()
    assert watch.following


async def test_a_history_that_cannot_be_followed_is_polled_instead(agent_client: AgentClient):
    watch = HistoryWatch(agent_client.temporal, "no-such-workflow")
    try:
        await changes(watch)
        while watch.following:
            await changes(watch)  # set again when it gives up
    finally:
        watch.close()
    assert not watch.closed


async def test_after_continue_as_new_a_watch_waits_for_the_new_run_or_names_the_closed_one(
    agent_client: AgentClient,
):
    """A new run answers no query before its first workflow task, which the server
    delays after a run shorter than a second: the watch is not ready until then, and
    names the closed run meanwhile, for its last events."""
    async with build_worker(agent_client, {"chat": chat()}):
        session = await agent_client.start_session(
            "chat", options=SessionOptions(continue_as_new_after_runs=1)
        )
        first = agent_client.temporal.get_workflow_handle(
            session.id, run_id=session.first_temporal_run_id
        )
        watch = HistoryWatch(agent_client.temporal, session.id)
        await changes(watch)
        await session.submit("one")  # the run then continues as new, at once
        with pytest.raises(WorkflowContinuedAsNewError):
            await first.result(follow_runs=False)
    # No worker: the new run's first task cannot complete, however late it is due.
    try:
        delayed = await _first_task_delay(session)
        if delayed:  # the first run lived under a second (else nothing waits)
            # The first run's last workflow task may have set ``changed`` already: wait
            # on until the watch has read the new run's start (the test's timeout ends
            # a watch that never names the closed run).
            while watch.tail is None:
                await changes(watch)
            assert watch.tail == session.first_temporal_run_id
            assert not watch.ready
        async with build_worker(agent_client, {"chat": chat()}):
            await session.close()
            while not watch.closed:
                await changes(watch)
    finally:
        watch.close()
    assert watch.ready and watch.tail is None  # named until the new run answered


async def _first_task_delay(session) -> float:
    async for event in session.workflow.fetch_history_events():
        attributes = event.workflow_execution_started_event_attributes
        return attributes.first_workflow_task_backoff.ToTimedelta().total_seconds()
    return 0.0
