"""Testing agents with ``ratchet.testing``: a real Temporal dev server, a worker in
the test, and a clock the test moves. Run with ``pytest examples/testing``.
"""

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from ratchet import RunOptions, SessionOptions, ToolCallingAgent, tool
from ratchet.agents import ScriptedModel, ask_user
from ratchet.testing import RatchetTestEnvironment

DAY = timedelta(hours=24)


@tool(requires_approval=True)
async def pay(to: str, amount: int) -> str:
    """Pay ``amount`` euros to ``to``."""
    return f"paid {amount} to {to}"


def billing_agent() -> ToolCallingAgent:
    model = ScriptedModel([ScriptedModel.call("pay", to="acme", amount=500), "Done."])
    return ToolCallingAgent(model, [pay])


@pytest.fixture(scope="module")
async def env() -> AsyncIterator[RatchetTestEnvironment]:
    """One dev server for the module; each ``env.worker`` gets a fresh task queue."""
    async with await RatchetTestEnvironment.start(time_skipping=True) as env:
        yield env


async def test_an_unanswered_approval_is_rejected_after_a_day(env: RatchetTestEnvironment):
    async with env.worker({"billing": billing_agent}):
        handle = await env.client.start_run(
            "billing", "pay acme 500", options=RunOptions(approval_timeout=DAY)
        )
        await handle.wait_for_pending()
        await env.skip(handle, DAY + timedelta(minutes=1))  # the 24 h timer fires now
        result = await handle.result()
        (decision,) = await handle.decisions()
    assert (decision.approved, decision.by) == (False, "timeout")
    assert result.output == "Done."


async def test_time_moves_only_when_the_test_says_so(env: RatchetTestEnvironment):
    """Without a skip the run waits for a person, who can still approve in time."""
    async with env.worker({"billing": billing_agent}):
        handle = await env.client.start_run(
            "billing", "pay acme 500", options=RunOptions(approval_timeout=DAY)
        )
        (pending,) = await handle.wait_for_pending()
        await env.skip(handle, timedelta(hours=23))
        assert await handle.pending() == [pending]
        await handle.approve(pending.action.id, by="alice")
        result = await handle.result()
        (decision,) = await handle.decisions()
    assert (decision.approved, decision.by) == (True, "alice")
    assert result.output == "Done."


async def test_a_session_goes_on_after_a_question_times_out(env: RatchetTestEnvironment):
    model = ScriptedModel([ScriptedModel.call("ask_user", question="Which city?"), "Oslo.", "Ok."])
    agent = ToolCallingAgent(model, [ask_user])
    async with env.worker({"chat": lambda: agent}):
        options = SessionOptions(run=RunOptions(approval_timeout=DAY))
        session = await env.client.start_session("chat", options=options)
        sending = asyncio.ensure_future(session.send("plan a trip"))  # waits for the answer
        await session.wait_for_pending()
        await env.skip(session, DAY + timedelta(minutes=1))  # nobody answers
        first = await sending
        second = await session.send("thanks")
        await session.close()
    assert (first.output, second.output) == ("Oslo.", "Ok.")
