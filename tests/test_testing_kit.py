"""ratchet.testing as a user meets it: a 24-hour approval timeout tested in
seconds, and a session whose message waits for an answer while time is skipped."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from ratchet.agents import ToolCallingAgent, ask_user, tool
from ratchet.errors import ConfigurationError
from ratchet.testing import RatchetTestEnvironment, ScriptedModel
from ratchet.wire.options import RunOptions, SessionOptions

pytestmark = pytest.mark.slow  # starts its own dev server

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
    async with await RatchetTestEnvironment.start(time_skipping=True) as env:
        yield env


async def test_a_24_hour_approval_timeout_fires_when_the_test_skips_a_day(
    env: RatchetTestEnvironment,
):
    async with env.worker({"billing": billing_agent}):
        handle = await env.client.start_run(
            "billing", "pay acme 500", options=RunOptions(approval_timeout=DAY)
        )
        (pending,) = await handle.wait_for_pending()
        assert pending.deadline is not None
        await env.skip(handle, DAY + timedelta(minutes=1))
        result = await handle.result()
        (decision,) = await handle.decisions()  # a query: the worker answers it
    assert (decision.approved, decision.by) == (False, "timeout")
    assert "nobody decided within 24 h" in (decision.reason or "")
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


async def test_a_session_message_waiting_for_an_answer_times_out_in_skipped_time(
    env: RatchetTestEnvironment,
):
    model = ScriptedModel(
        [ScriptedModel.call("ask_user", question="Which city?"), "Fine, Oslo.", "Noted."]
    )
    agent = ToolCallingAgent(model, [ask_user])
    async with env.worker({"chat": lambda: agent}):
        session = await env.client.start_session(
            "chat", options=SessionOptions(run=RunOptions(approval_timeout=DAY))
        )
        # The send waits (an Update, then polling) while the test skips the day.
        sending = asyncio.ensure_future(session.send("plan a trip"))
        (question,) = await session.wait_for_pending()
        assert question.action.question == "Which city?"
        await env.skip(session, DAY + timedelta(minutes=1))
        first = await sending
        second = await session.send("thanks")  # the session goes on after the skip
        await session.close()
        thread = await session.thread()
    assert first.output == "Fine, Oslo." and second.output == "Noted."
    answers = [m.text for m in thread.messages if m.role == "tool"]
    assert answers == ["(no answer: nobody decided within 24 h)"]


async def test_skipping_time_needs_an_environment_that_skips(env: RatchetTestEnvironment):
    async with await RatchetTestEnvironment.start() as plain:
        async with plain.worker({"billing": billing_agent}):
            handle = await plain.client.start_run("billing", "pay acme 500")
            with pytest.raises(ConfigurationError, match=r"start\(time_skipping=True\)"):
                await plain.skip(handle, DAY)
            await handle.cancel()
