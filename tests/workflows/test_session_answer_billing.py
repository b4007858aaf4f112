"""A session message's answer reaches its sender in the send's Update result when it
is small: no query (a billed action) to read it back from the thread."""

from __future__ import annotations

import pytest

from ratchet.agents import ScriptedModel, ToolCallingAgent
from ratchet.client import AgentClient
from ratchet.devserver import DevServer, free_port
from ratchet.worker import build_worker

from ..metering import settled

QUERY = "grpc_QueryWorkflow"
LARGE = "x" * 6000


@pytest.mark.slow  # a dev server of its own, for its metering
async def test_a_small_answer_comes_in_the_update_and_a_large_one_is_read_back():
    port = free_port()
    with DevServer.start(ui=False, extra_args=["--metrics-port", str(port)]) as server:
        client = await AgentClient.connect(server.address, task_queue="answers")
        agent = ToolCallingAgent(ScriptedModel(["warm", "short answer", LARGE]))
        async with build_worker(client, {"echo": agent}):
            session = await client.start_session("echo")
            assert (await session.send("warm up")).output == "warm"
            before = await settled(port)
            small = await session.send("a small one")
            after_small = await settled(port)
            large = await session.send("a large one")
            after_large = await settled(port)
            await session.close()
    assert small.output == "short answer"
    assert small.final_response is not None and small.final_response.text == "short answer"
    # Before: one query per message, the client reading the answer back.
    assert after_small[QUERY] - before[QUERY] == 0
    assert large.final_response is not None and large.final_response.text == LARGE
    # Read back: the thread's id (once per handle) and the answer.
    assert after_large[QUERY] - after_small[QUERY] == 2
