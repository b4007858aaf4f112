"""What the server holds of a running turn: its acknowledged heartbeats' details."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from ratchet.agents import RunContext, ScriptedModel, ToolCallingAgent, tool
from ratchet.client import AgentClient, RunHandle
from ratchet.types import Message
from ratchet.wire import RunOptions
from ratchet.wire._names import TURN_ACTIVITY
from ratchet.worker import build_worker

from ..history import attempts


async def turn_details(client: AgentClient, handle: RunHandle) -> dict[str, Any]:
    """The heartbeat details the server holds for the run's running turn."""
    description = await handle.workflow.describe()
    (turn,) = [
        a
        for a in description.raw_description.pending_activities
        if a.activity_type.name == TURN_ACTIVITY
    ]
    payloads = turn.heartbeat_details.payloads
    decoded = await client.temporal.data_converter.decode(payloads) if payloads else []
    return decoded[0] if decoded else {}


def call_then_answer(messages: Sequence[Message], context: RunContext) -> str | Message:
    if any(m.role == "tool" for m in messages):
        return "done"
    return ScriptedModel.call("work")


async def test_a_fast_model_call_stays_checkpointed_while_the_tool_after_it_runs(
    agent_client: AgentClient,
):
    # The model answers at once; its reply is acknowledged before the tool starts. No
    # heartbeat sent earlier (the turn's first, with no step) may reach the server
    # after that one and replace it: a worker killed now would lose the reply.
    started = asyncio.Event()
    release = asyncio.Event()

    @tool
    async def work() -> str:
        """Work until released."""
        started.set()
        await release.wait()
        return "worked"

    agent = ToolCallingAgent(ScriptedModel(call_then_answer), [work])
    options = RunOptions(heartbeat_timeout=timedelta(seconds=3))
    held: list[bool] = []
    async with build_worker(agent_client, {"fast": agent}):
        for i in range(10):
            started.clear()
            release.clear()
            handle = await agent_client.start_run("fast", f"go {i}", options=options)
            await started.wait()
            held.append("model" in await turn_details(agent_client, handle))
            release.set()
            assert (await handle.result()).output == "done"
    assert held == [True] * 10


async def test_a_turn_outlasting_the_worker_cores_own_heartbeat_timer_completes(
    agent_client: AgentClient,
):
    # The worker's core cancels an attempt whose SDK heartbeats stopped being
    # acknowledged for the heartbeat timeout plus 5 s, whatever the turn's own
    # heartbeats told the server: the turn hands the SDK one regularly.
    runs = 0

    @tool
    async def work() -> str:
        """Work for longer than the core's timer."""
        nonlocal runs
        runs += 1
        await asyncio.sleep(8)  # the duration under test: 2 s + 5 s, and more
        return "worked"

    agent = ToolCallingAgent(ScriptedModel(call_then_answer), [work])
    # 2 s, not 1: each heartbeat is acknowledged within 0.8 s of the last, a margin that
    # holds on two cores shared with another xdist worker (0.4 s is tight there).
    options = RunOptions(
        heartbeat_timeout=timedelta(seconds=2), initial_retry_interval=timedelta(seconds=1)
    )
    async with build_worker(agent_client, {"slow": agent}):
        handle = await agent_client.start_run("slow", "go", options=options)
        assert (await handle.result()).output == "done"
    assert runs == 1
    assert await attempts(handle) == [1, 1]
