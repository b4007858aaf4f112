"""A send's request id: a retry answers the message it first sent, across
continue-as-new; the same id with other messages, or one older than the session
remembers, is refused and runs nothing."""

from __future__ import annotations

import asyncio
import time
import uuid
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
from ratchet.wire._session_data import RecentRequests, SendRequest, request_made_ms
from ratchet.worker import build_worker
from ratchet.workflows import _idempotency as idempotency
from ratchet.workflows._idempotency import KEPT, RequestIds

from ..chaos import chaos_sends
from ..conftest import worker_process
from .test_sessions import Echo

AHEAD = "ffffffff-ffff-7fff-bfff-ffffffffffff"
"""A UUIDv7 request id dated about 8,900 years ahead."""


def uuid7_made(ms: int) -> str:
    """A UUIDv7 request id made at ``ms`` (since the epoch)."""
    value = (ms << 80) | (0x7 << 76) | (0b10 << 62) | uuid.uuid4().int & (2**62 - 1)
    return str(uuid.UUID(int=value))


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
    options = SessionOptions(continue_as_new_after_runs=2)
    async with build_worker(agent_client, {"echo": Echo}):
        session = await agent_client.start_session("echo", options=options)
        await session.send("pay 10 EUR", request_id="order-18")
        with pytest.raises(ConversationConflictError) as same_run:
            await session.send("pay 1000 EUR", request_id="order-18")
        await session.send("two")  # continues as new after this one
        with pytest.raises(ConversationConflictError) as next_run:
            await session.send("pay 1000 EUR", request_id="order-18")
        thread = await session.thread()
        await session.close()
    for refused in (same_run.value, next_run.value):
        assert isinstance(refused, RunFailedError)
        assert "'order-18'" in str(refused) and "new request id" in str(refused)
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


@pytest.mark.fast
def test_a_session_remembers_its_latest_ids_and_refuses_uuid7_ids_it_forgot():
    now = int(time.time() * 1000)
    book = RequestIds(RecentRequests())
    ids = [uuid7_made(now - 1000 + i) for i in range(KEPT + 1)]
    for ticket, request_id in enumerate(ids):
        book.add(request_id, "d", ticket, now)
    carried = RequestIds(book.carried())  # across a continue-as-new
    assert carried.find("s", ids[-1], "d", now) == KEPT
    assert carried.find("s", ids[1], "d", now) == 1
    with pytest.raises(Exception, match="RequestExpired|made before"):
        carried.find("s", ids[0], "d", now)  # forgotten to keep within KEPT
    assert carried.find("s", uuid7_made(now), "d", now) is None  # a new one
    assert carried.find("s", "order-1", "d", now) is None  # not a UUIDv7: new
    later = now + 25 * 3600 * 1000
    with pytest.raises(Exception, match="made before"):
        carried.find("s", ids[-1], "d", later)  # past the age bound
    assert request_made_ms(new_request_id()) is not None
    assert len(book.carried().model_dump_json()) < 20 * 1024  # small enough to carry


async def test_an_id_dated_ahead_refuses_no_later_send_once_the_session_forgot_it(
    agent_client: AgentClient, monkeypatch: pytest.MonkeyPatch
):
    """0.1.0 took a forgotten UUIDv7 id's time as its horizon: one id dated ahead
    (here, the year 10889) refused every later default send, for good. The session
    remembers 2 ids here instead of 500 (the same rule, fewer sends); each send comes
    to a new workflow run, so Temporal's own dedup of an Update id does not answer the
    late retry."""
    monkeypatch.setattr(idempotency, "KEPT", 2)
    options = SessionOptions(continue_as_new_after_runs=1)
    async with build_worker(agent_client, {"echo": Echo}):
        session = await agent_client.start_session("echo", options=options)
        await session.send("ahead", request_id=AHEAD)
        await session.send("one")
        await session.send("two")  # the session forgets AHEAD here
        later = await session.send("three")
        honest = new_request_id()
        await session.send("four", request_id=honest)
        await session.send("five")
        await session.send("six")  # forgets `honest`, which was made before it was taken
        with pytest.raises(RequestExpiredError):
            await session.send("four", request_id=honest)  # a late retry still runs nothing
        thread = await session.thread()
        await session.close()
    assert later.output is not None and "three" in later.output
    assert [m.text for m in thread.messages if m.role == "user"].count("four") == 1


@pytest.mark.fast
def test_an_id_dated_ahead_counts_only_up_to_when_the_session_took_it():
    now = int(time.time() * 1000)
    book = RequestIds(RecentRequests())
    book.add(AHEAD, "d", 0, now)
    honest = [uuid7_made(now + i) for i in range(1, KEPT + 1)]
    for ticket, request_id in enumerate(honest, start=1):
        book.add(request_id, "d", ticket, now + ticket)  # AHEAD is forgotten
    assert book.find("s", uuid7_made(now + KEPT + 1), "d", now + KEPT + 1) is None
    book.add(uuid7_made(now + KEPT + 1), "d", KEPT + 1, now + KEPT + 1)  # honest[0] forgotten
    with pytest.raises(Exception, match="made before"):
        book.find("s", honest[0], "d", now + KEPT + 1)
    assert book.carried().horizon_ms == now + 1  # what is carried holds no time ahead


@pytest.mark.fast
def test_a_horizon_carried_from_0_1_0_ahead_of_the_ids_remembered_is_pulled_back():
    """A session wedged by 0.1.0 takes fresh ids again at its next send, without a
    continue-as-new (it refused every send, so it would not have made one)."""
    now = int(time.time() * 1000)
    book = RequestIds(RecentRequests())
    book.add(uuid7_made(now - 5000), "d", 7, now - 4000)
    wedged = book.carried().model_copy(update={"horizon_ms": int(AHEAD[:8] + AHEAD[9:13], 16)})
    assert RequestIds(wedged).find("s", new_request_id(), "d", now) is None
    assert RequestIds(wedged).find("s", uuid7_made(now - 3999), "d", now) is None
    with pytest.raises(Exception, match="made before"):  # made before the oldest id it
        RequestIds(wedged).find("s", uuid7_made(now - 4000), "d", now)  # remembers was taken
    alone = RecentRequests(horizon_ms=wedged.horizon_ms)  # and with no id remembered
    assert RequestIds(alone).find("s", new_request_id(), "d", now) is None


@pytest.mark.fast
def test_the_send_handler_forgets_as_its_validator_did():
    """A replay runs no validator of an accepted Update: had only ``find`` forgotten
    an id past ``MAX_AGE``, a replay would answer its retry with the old ticket where
    the first execution ran it again (another command: a replay that fails)."""
    now = int(time.time() * 1000)
    book = RequestIds(RecentRequests())
    book.add("order-1", "d", 3, now)
    assert book.known("order-1", "d", now + 1) == 3
    assert book.known("order-1", "d", now + 25 * 3600 * 1000) is None


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
