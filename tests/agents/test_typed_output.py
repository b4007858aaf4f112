"""Typed final answers (``ToolCallingAgent(output_type=...)``): validated in the turn,
sent back to the model when invalid, returned parsed by runs and sessions."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

import pytest
from pydantic import BaseModel, ValidationError
from typing_extensions import TypedDict

from ratchet.agents import ScriptedModel, ToolCallingAgent, tool
from ratchet.agents._output import FINAL_RESULT, OutputSpec
from ratchet.client import AgentClient
from ratchet.errors import ConfigurationError, MaxTurnsExceededError
from ratchet.types import Message
from ratchet.wire import RunOptions, SessionOptions
from ratchet.worker import build_worker


class Invoice(BaseModel):
    customer: str
    total_eur: float


@dataclass
class Refund:
    invoice: str
    reason: str


def agent(*replies: str | Message, output_type: object = Invoice) -> ToolCallingAgent:
    @tool
    def lookup(customer: str) -> str:
        """The customer's open invoice."""
        return f"{customer} owes 120.50 EUR"

    return ToolCallingAgent(ScriptedModel(list(replies)), tools=[lookup], output_type=output_type)


async def test_an_invalid_answer_goes_back_to_the_model_and_the_valid_one_is_returned(
    agent_client: AgentClient,
):
    invoicing = agent(
        ScriptedModel.call("lookup", customer="acme"),
        ScriptedModel.call(FINAL_RESULT, customer="acme", total_eur="a lot"),  # invalid
        ScriptedModel.call(FINAL_RESULT, customer="acme", total_eur=120.5),
    )
    async with build_worker(agent_client, {"invoicing": invoicing}):
        handle = await agent_client.start_run("invoicing", "what does acme owe?")
        result = await handle.result()
        thread = (await handle.record()).session.thread
    assert result.output_as(Invoice) == Invoice(customer="acme", total_eur=120.5)
    assert json.loads(result.output) == {"customer": "acme", "total_eur": 120.5}
    assert result.turns == 3
    errors = [m.text for m in thread.messages if m.role == "tool" and m.is_error]
    assert len(errors) == 1 and "total_eur" in errors[0]  # what the model read
    assert thread.messages[-1].text == result.output  # the last message is the answer


async def test_a_plain_reply_is_accepted_when_it_is_the_types_json_and_sent_back_if_not(
    agent_client: AgentClient,
):
    invoicing = agent(
        "acme owes about 120 euros",  # not JSON: the model is told and asked again
        '{"customer": "acme", "total_eur": 120.5}',
    )
    async with build_worker(agent_client, {"invoicing": invoicing}):
        handle = await agent_client.start_run("invoicing", "what does acme owe?")
        result = await handle.result()
        thread = (await handle.record()).session.thread
    assert result.output_as(Invoice).total_eur == 120.5
    nudges = [m.text for m in thread.messages if m.role == "user"][1:]
    assert len(nudges) == 1 and f"calling {FINAL_RESULT}" in nudges[0]


async def test_a_union_or_dataclass_answer_is_wrapped_for_the_tool_and_not_in_the_output(
    agent_client: AgentClient,
):
    refunds = agent(
        ScriptedModel.call(FINAL_RESULT, value={"invoice": "INV-7", "reason": "double charge"}),
        output_type=Refund | Invoice,
    )
    async with build_worker(agent_client, {"refunds": refunds}):
        result = await (await agent_client.start_run("refunds", "refund INV-7")).result()
    assert result.output_as(Refund | Invoice) == Refund(invoice="INV-7", reason="double charge")
    assert json.loads(result.output) == {"invoice": "INV-7", "reason": "double charge"}


async def test_a_session_returns_typed_answers_turn_after_turn(agent_client: AgentClient):
    invoicing = agent(
        ScriptedModel.call(FINAL_RESULT, customer="acme", total_eur=1),
        "(not asked: the answer's JSON is the thread's second assistant message)",
        ScriptedModel.call(FINAL_RESULT, customer="globex", total_eur=2),
    )
    async with build_worker(agent_client, {"invoicing": invoicing}):
        session = await agent_client.start_session("invoicing")
        first = await session.send("acme?")
        second = await session.send("globex?")
        await session.close()
    assert [r.output_as(Invoice).customer for r in (first, second)] == ["acme", "globex"]


async def test_a_model_that_never_answers_validly_fails_the_run_at_max_turns(
    agent_client: AgentClient,
):
    stubborn = agent(*["no idea"] * 2, ScriptedModel.call(FINAL_RESULT, customer="acme"))
    async with build_worker(agent_client, {"stubborn": stubborn}):
        handle = await agent_client.start_run(
            "stubborn", "what does acme owe?", options=RunOptions(max_turns=3)
        )
        with pytest.raises(MaxTurnsExceededError) as failed:
            await handle.result()
    # It says that no valid Invoice came, and what was wrong with the last one.
    assert "max_turns=3" in str(failed.value)
    assert "not a valid Invoice: total_eur: Field required" in str(failed.value)


class Totals(TypedDict):
    customer: str
    total_eur: float


@pytest.mark.parametrize("output_type", [Refund, Totals], ids=["dataclass", "TypedDict"])
def test_a_dataclass_or_typed_dict_is_offered_unwrapped_like_a_model(output_type: type):
    spec = OutputSpec(output_type)
    assert not spec.wrapped
    assert set(spec.tool.parameters["properties"]) == set(output_type.__annotations__)
    assert spec.tool.parameters["type"] == "object"
    assert OutputSpec(Refund | Invoice).wrapped and OutputSpec(list[Invoice]).wrapped
    assert set(OutputSpec(list[Invoice]).tool.parameters["properties"]) == {"value"}
    assert "$defs" in OutputSpec(list[Invoice]).tool.parameters  # refs still resolve


@pytest.mark.parametrize("session", [False, True], ids=["run", "session"])
async def test_an_answer_without_its_wrapper_is_a_tool_error_the_model_reads(
    agent_client: AgentClient, session: bool
):
    """Before: KeyError 'value' crashed the turn, retried for minutes."""
    refunds = agent(
        ScriptedModel.call(FINAL_RESULT, invoice="INV-7", reason="double charge"),  # unwrapped
        ScriptedModel.call(FINAL_RESULT, value={"invoice": "INV-7", "reason": "double charge"}),
        output_type=Refund | Invoice,
    )
    options = RunOptions(max_attempts=1)
    async with build_worker(agent_client, {"refunds": refunds}):
        if session:
            handle = await agent_client.start_session(
                "refunds", options=SessionOptions(run=options)
            )
            result = await handle.send("refund INV-7")
            thread = (await handle.thread()).messages
            await handle.close()
        else:
            run = await agent_client.start_run("refunds", "refund INV-7", options=options)
            result = await run.result()
            thread = (await run.record()).session.thread.messages
    assert result.output_as(Refund | Invoice) == Refund(invoice="INV-7", reason="double charge")
    (error,) = [m.text for m in thread if m.role == "tool" and m.is_error]
    assert 'goes in {"value": ...}' in error and "invoice, reason" in error


def test_output_as_says_what_is_wrong_with_a_plain_answer():
    from ratchet.types import AgentStatus
    from ratchet.wire import RunResult

    result = RunResult(
        workflow_id="w",
        agent="a",
        status=AgentStatus.COMPLETED,
        final_response=Message.assistant("hi"),
    )
    with pytest.raises(ValidationError, match="Invalid JSON"):
        result.output_as(Invoice)


def test_a_tool_named_like_the_answer_tool_is_refused():
    @tool(name=FINAL_RESULT)
    def clash() -> str:
        return ""

    with pytest.raises(ValueError, match="rename it"):
        ToolCallingAgent(ScriptedModel([]), tools=[clash], output_type=Invoice)


def test_an_output_type_pydantic_cannot_validate_is_refused_when_the_agent_is_built():
    import typing

    class Plain(typing.TypedDict):  # pydantic wants typing_extensions' before 3.12
        customer: str

    if sys.version_info >= (3, 12):
        pytest.skip("typing.TypedDict is validated from Python 3.12 on")  # CI runs 3.11
    with pytest.raises(ConfigurationError, match="cannot be validated: Please use"):
        ToolCallingAgent(ScriptedModel([]), output_type=Plain)
