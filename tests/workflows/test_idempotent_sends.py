"""A send's request id: a retry answers the message it first sent, across
continue-as-new; the same id with other messages, or one older than the session
remembers, is refused and runs nothing. The request-id book itself (bounds, the
horizon of forgotten ids, an id dated ahead): tests/unit/test_request_ids.py."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from ratchet.agents import ScriptedModel, ToolCallingAgent, ask_user
from ratchet.client import AgentClient, new_request_id
from ratchet.client import _retries as retries
from ratchet.errors import (
    AnswerUnavailableError,
    ConversationConflictError,
    InvalidInputError,
    RequestExpiredError,
    RunFailedError,
)
from ratchet.testing import RatchetTestEnvironment
from ratchet.types import Message
from ratchet.wire import RunOptions, SessionOptions
from ratchet.wire._names import SEND_UPDATE
from ratchet.wire._session_data import SendRequest
from ratchet.worker import build_worker

from ..chaos import chaos_sends
from ..conftest import worker_process
from .test_sessions import Echo


async def test_a_retried_request_id_answers_its_message_after_continue_as_new(
    agent_client: AgentClient,
):
    options = SessionOptions(continue_as_new_after_runs=1)
    async with build_worker(agent_client, {"echo": Echo}):
        session = await agent_client.start_session("echo", options=options)
        first = await session.send("pay once", request_id="order-17")
        await session.send("something else")  # the session has continued as new since
        again = await session.send("pay once", request_id="order-17")
        thread = await session.thread()
        status = await session.status()
        await session.close()
    assert again.output == first.output == "#1 pay once (saw 1)"
    assert again.final_response is not None and again.final_response.text == first.output
    assert [m.text for m in thread.messages].count("pay once") == 1
    assert status.runs == 2


async def test_a_request_id_sent_again_with_other_messages_is_refused(
    agent_client: AgentClient,
):
    """After a continue-as-new the carried book refuses it as well:
    tests/unit/test_request_ids.py (the book's carrying: the retry test above)."""
    async with build_worker(agent_client, {"echo": Echo}):
        session = await agent_client.start_session("echo")
        await session.send("pay 10 EUR", request_id="order-18")
        with pytest.raises(ConversationConflictError) as refused:
            await session.send("pay 1000 EUR", request_id="order-18")
        thread = await session.thread()
        await session.close()
    assert isinstance(refused.value, RunFailedError)
    assert "'order-18'" in str(refused.value) and "new request id" in str(refused.value)
    assert "pay 1000 EUR" not in [m.text for m in thread.messages]


async def test_a_submit_with_a_request_id_taken_for_other_messages_raises(
    agent_client: AgentClient,
):
    """``submit`` returns once the session took the message, and raises when it
    refused it (its Update's validator), as ``send`` does."""
    async with build_worker(agent_client, {"echo": Echo}):
        session = await agent_client.start_session("echo")
        assert await session.submit("pay 10 EUR", request_id="order-19") == "order-19"
        assert await session.submit("pay 10 EUR", request_id="order-19") == "order-19"  # retried
        with pytest.raises(ConversationConflictError, match="'order-19'"):
            await session.submit("pay 1000 EUR", request_id="order-19")
        await session.send("pay 10 EUR", request_id="order-19")  # its answer
        thread = await session.thread()
        await session.close()
    assert [m.text for m in thread.messages if m.role == "user"] == ["pay 10 EUR"]


async def test_an_empty_or_over_long_request_id_is_refused_and_runs_nothing(
    agent_client: AgentClient,
):
    """An empty id was replaced by a fresh one, so a retry ran the message again. The
    client refuses it, and so does the session, for a caller of the raw Update."""
    async with build_worker(agent_client, {"echo": Echo}):
        session = await agent_client.start_session("echo")
        for request_id, why in [("", "request_id is empty"), ("r" * 201, "201 characters")]:
            with pytest.raises(InvalidInputError, match=why) as refused:
                await session.send("pay once", request_id=request_id)
            assert "leave request_id out" in str(refused.value)
            with pytest.raises(InvalidInputError, match=why):
                await session.submit("pay once", request_id=request_id)
            raw = SendRequest(messages=[Message(role="user", content="pay once")])
            handle = agent_client.temporal.get_workflow_handle(session.id)
            with pytest.raises(WorkflowUpdateFailedError) as by_update:
                await handle.execute_update(
                    SEND_UPDATE, raw.model_copy(update={"request_id": request_id})
                )
            cause = by_update.value.cause
            assert isinstance(cause, ApplicationError) and cause.type == "InvalidInputError"
            assert why in cause.message
        thread = await session.thread()
        await session.close()
    assert thread.messages == []


@pytest.mark.slow  # starts its own dev server, whose clock the test moves
async def test_a_retry_older_than_the_session_remembers_runs_nothing():
    """A day later the session has forgotten the id: a retry of it is refused (it may
    have run, and did), while a new id sends as usual, though the session's clock is
    a day ahead of the client's."""
    script = ["Hi.", "Hello.", ScriptedModel.call("ask_user", question="Which city?"), "Oslo."]
    agent = ToolCallingAgent(ScriptedModel([*script, "Ok."]), [ask_user])
    async with await RatchetTestEnvironment.start(time_skipping=True) as env:
        async with env.worker({"chat": lambda: agent}):
            options = SessionOptions(
                run=RunOptions(approval_timeout=timedelta(hours=24)),
                continue_as_new_after_runs=2,  # the retry comes to the next workflow run
            )
            session = await env.client.start_session("chat", options=options)
            await session.send("warm up")
            request_id = new_request_id()
            await session.send("hello", request_id=request_id)
            sending = asyncio.ensure_future(session.send("plan a trip"))
            await session.wait_for_pending()
            await env.skip(session, timedelta(hours=24, minutes=1))  # nobody answers
            assert (await sending).output == "Oslo."
            with pytest.raises(RequestExpiredError) as refused:
                await session.send("hello", request_id=request_id)
            later = await session.send("thanks", request_id=new_request_id())
            thread = await session.thread()
            await session.close()
    assert request_id in str(refused.value) and "24 hours" in str(refused.value)
    assert later.output == "Ok."
    assert [m.text for m in thread.messages].count("hello") == 1


@pytest.mark.timeout(420)
async def test_sends_under_worker_kills_and_continue_as_new_run_each_message_once(
    temporal_server, task_queue: str, event_log
):
    """5 sessions x 30 sends with a tool call each, two workers, one SIGKILLed every
    3-6 s (seeded), sessions continuing as new every 5 messages, clients retrying
    with the same request id: no message runs twice, none is lost. (30 sends: a
    fresh worker reads closed runs from history, and 20 were over before 5 kills.)"""
    report = await chaos_sends(
        temporal_server,
        task_queue,
        event_log,
        lambda: worker_process(temporal_server, task_queue, event_log),
        seed=28,
        sends=30,
    )
    assert report.kills >= 5, report
    assert (report.run_twice, report.lost, report.errors) == ([], [], []), report


async def test_a_send_no_worker_takes_gives_up_saying_so_instead_of_waiting_for_ever(
    agent_client: AgentClient, monkeypatch: pytest.MonkeyPatch
):
    """The server holds an Update no worker takes: a send with its worker stopped
    waited past 195 s, while the docs promise AnswerUnavailableError after the
    retry window (two minutes; a few seconds here)."""
    async with build_worker(agent_client, {"echo": ToolCallingAgent(ScriptedModel(["one"]))}):
        session = await agent_client.start_session("echo")
        assert (await session.send("hi")).output == "one"
    monkeypatch.setattr(retries, "RETRY_FOR", 3.0)
    with pytest.raises(AnswerUnavailableError) as unavailable:
        await session.send("anyone?", request_id="no-worker-1")
    assert unavailable.value.taken is None and unavailable.value.request_id == "no-worker-1"
