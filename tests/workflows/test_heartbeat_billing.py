"""Billed heartbeats of a turn with default options, counted by the dev server's own
metering (the ``action`` metric by ``action_type``, as bench/actions.py reads it)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta

import pytest

from ratchet.agents import ModelResponse, RunContext, ScriptedModel, Tool, ToolCallingAgent
from ratchet.client import AgentClient
from ratchet.devserver import DevServer, free_port
from ratchet.types import Message
from ratchet.wire import RunOptions
from ratchet.worker import build_worker

from ..metering import heartbeats, settled

MODEL_SECONDS = 6.0


class SlowModel(ScriptedModel):
    """A model call that takes ``seconds``."""

    def __init__(self, seconds: float) -> None:
        super().__init__(["done"])
        self.seconds = seconds

    async def create(
        self, messages: Sequence[Message], tools: Sequence[Tool], context: RunContext
    ) -> ModelResponse:
        await asyncio.sleep(self.seconds)  # the call's latency, not synchronisation
        return await super().create(messages, tools, context)


async def billed_heartbeats(seconds: float, options: RunOptions | None = None) -> int:
    """Heartbeats metered for one run whose one model call takes ``seconds``."""
    port = free_port()
    with DevServer.start(ui=False, extra_args=["--metrics-port", str(port)]) as server:
        client = await AgentClient.connect(server.address, task_queue="billing")
        agent = ToolCallingAgent(SlowModel(seconds), [])
        async with build_worker(client, {"slow": agent}):
            before = heartbeats(await settled(port))
            assert (await client.run("slow", "go", options=options)).output == "done"
            return heartbeats(await settled(port)) - before


@pytest.mark.slow
async def test_a_six_second_model_call_sends_no_billed_heartbeat_with_default_options():
    # The old default heartbeat timeout of 3 s sent 4 in those 6 s.
    assert await billed_heartbeats(MODEL_SECONDS) == 0


@pytest.mark.slow
async def test_a_longer_model_call_sends_one_billed_heartbeat_per_eight_seconds():
    # 0.8 of the default 10 s heartbeat timeout: at 8 s and 16 s of a 17 s call; the
    # old design sent the turn's own and, every other time, the SDK's too.
    assert 1 <= await billed_heartbeats(17.0) <= 2


@pytest.mark.slow
async def test_a_turn_with_no_heartbeat_timeout_sends_no_heartbeat():
    # The peers' price: no liveness heartbeat at all (a dead worker's turn waits for
    # turn_timeout); the option was refused before, and a turn without a timeout
    # heartbeated every 2 s.
    options = RunOptions(heartbeat_timeout=None, turn_timeout=timedelta(seconds=30))
    assert await billed_heartbeats(MODEL_SECONDS, options) == 0
