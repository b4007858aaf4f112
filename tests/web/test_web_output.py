"""A typed answer over HTTP: ``output`` is its JSON value, as ``ratchet run --json``
prints it, in a send's JSON and streamed result and in a run's result."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2 as httpx
import pytest

from ratchet.agents import ScriptedModel, ToolCallingAgent
from ratchet.agents._output import FINAL_RESULT
from ratchet.client import AgentClient
from ratchet.web import create_app
from ratchet.worker import build_worker

from ..logged_agents import Invoice
from ..web_http import new_session, sse

ACME = {"customer": "acme", "total_eur": 120.5}


def invoicing() -> ToolCallingAgent:
    answers = [ScriptedModel.call(FINAL_RESULT, **ACME), "acme owes 120.50 EUR"]
    return ToolCallingAgent(ScriptedModel(answers * 3), output_type=Invoice)


@pytest.fixture
async def http(agent_client: AgentClient) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app(agent_client, auth=None))
    async with (
        build_worker(agent_client, {"invoicing": invoicing}),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client,
    ):
        yield client


async def test_a_typed_answers_output_is_its_json_value_as_ratchet_run_json_prints_it(
    agent_client: AgentClient, http: httpx.AsyncClient
):
    session = await new_session(http, "invoicing")
    sent = await http.post(f"/v1/sessions/{session}/messages", json={"text": "acme?"})
    assert sent.status_code == 200, sent.text
    assert sent.json()["output"] == ACME  # '{"customer":"acme","total_eur":120.5}' before
    assert sent.json()["final_response"]["content"] == Invoice(**ACME).model_dump_json()

    streamed = {"Accept": "text/event-stream"}
    path = f"/v1/sessions/{session}/messages"
    async with http.stream("POST", path, json={"text": "again"}, headers=streamed) as answer:
        frames = [frame async for frame in sse(answer)]
    _, event, result = frames[-1]
    assert (event, result["output"]) == ("result", ACME)

    run = await agent_client.start_run("invoicing", "acme?")
    assert (await http.get(f"/v1/runs/{run.id}")).json()["output"] == ACME
