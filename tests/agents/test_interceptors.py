"""Tool interceptors: the seam a run's options name, resolved on the worker, that sees
each tool call and may answer it without running the tool."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ratchet.agents import PROCEED, Intercepted, RunContext, ScriptedModel, ToolCallingAgent, tool
from ratchet.client import AgentClient
from ratchet.errors import RunFailedError
from ratchet.evals import EvalsPlugin
from ratchet.evals._recording import RECORDING, Recording
from ratchet.types import Message, ToolCall
from ratchet.wire import InterceptorRef, RunOptions
from ratchet.worker import build_worker

RAN: list[str] = []


@tool
def lookup(city: str) -> str:
    """Today's weather in a city."""
    RAN.append(f"lookup {city}")
    return "snow"


@tool(requires_approval=True)
def charge(amount: int) -> str:
    """Charge the card."""
    RAN.append(f"charge {amount}")
    return "charged"


class Canned:
    """Answers calls to the tools its config names with canned text; asks a person
    first about the ones listed under ``ask``."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.answers: dict[str, str] = config["answers"]
        self.ask: list[str] = config.get("ask", [])

    def intercept(self, call: ToolCall, context: RunContext) -> Intercepted:
        SEEN.append((call.name, context.agent, context.turn))
        if call.name not in self.answers:
            return PROCEED
        answer = Message.tool(call, self.answers[call.name])
        return Intercepted(answer, ask=call.name in self.ask)


SEEN: list[tuple[str, str, int]] = []


def reply(messages: Any, context: RunContext) -> Message | str:
    """Both calls on the first turn; then the tool results it was given."""
    if context.turn == 1:
        return ScriptedModel.calls(("lookup", {"city": "Oslo"}), ("charge", {"amount": 5}))
    return " | ".join(sorted(m.text for m in messages if m.role == "tool"))


def agent() -> ToolCallingAgent:
    return ToolCallingAgent(ScriptedModel(reply), [lookup, charge])


def canned(**config: Any) -> RunOptions:
    return RunOptions(tool_interceptor=InterceptorRef(name="canned", config=config))


async def test_a_runs_interceptor_answers_a_call_without_running_its_tool_or_asking(
    agent_client: AgentClient,
):
    RAN.clear()
    SEEN.clear()
    async with build_worker(agent_client, {"pay": agent}, tool_interceptors={"canned": Canned}):
        result = await agent_client.run(
            "pay", "weather, then pay", options=canned(answers={"charge": "charged (canned)"})
        )
    assert result.output == "charged (canned) | snow"
    assert RAN == ["lookup Oslo"]  # the charge never ran, and nobody approved it
    assert SEEN == [("lookup", "pay", 1), ("charge", "pay", 1)]


async def test_an_interceptor_can_have_a_person_decide_before_it_answers(
    agent_client: AgentClient,
):
    RAN.clear()
    config = {"answers": {"charge": "charged (canned)"}, "ask": ["charge"]}
    async with build_worker(agent_client, {"pay": agent}, tool_interceptors={"canned": Canned}):
        handle = await agent_client.start_run("pay", "weather, then pay", options=canned(**config))
        (waiting,) = await handle.wait_for_pending()
        await handle.approve(waiting.action.id)
        result = await asyncio.wait_for(handle.result(), 60)
    assert result.output == "charged (canned) | snow"  # the tool activity asked it again
    assert RAN == ["lookup Oslo"]


async def test_a_run_naming_an_interceptor_the_worker_lacks_fails_naming_the_registered_ones(
    agent_client: AgentClient,
):
    async with build_worker(agent_client, {"pay": agent}, tool_interceptors={"canned": Canned}):
        with pytest.raises(RunFailedError) as failure:
            await agent_client.run(
                "pay",
                "pay",
                options=RunOptions(tool_interceptor=InterceptorRef(name="cannned")),
            )
    assert "tool interceptor 'cannned'" in str(failure.value)
    assert "registered: canned." in str(failure.value)


async def test_a_rerun_on_a_worker_without_the_evals_plugin_fails_saying_to_add_it(
    agent_client: AgentClient,
):
    empty = InterceptorRef(name=RECORDING, config=Recording().model_dump(mode="json"))
    recording = RunOptions(tool_interceptor=empty)
    async with build_worker(agent_client, {"pay": agent}):
        with pytest.raises(RunFailedError) as failure:
            await agent_client.run("pay", "pay", options=recording)
    assert "registered: (none)" in str(failure.value)
    assert "ratchet.evals.EvalsPlugin" in str(failure.value)
    RAN.clear()
    async with build_worker(agent_client, {"pay": agent}, plugins=[EvalsPlugin()]):
        bad = RunOptions(tool_interceptor=InterceptorRef(name=RECORDING, config="calls"))
        with pytest.raises(RunFailedError, match="refused the run's config") as failure:
            await agent_client.run("pay", "pay", options=bad)  # not retried: at once
        result = await agent_client.run("pay", "pay", options=recording)
    assert RAN == []  # an empty recording: both calls refused, neither ran
    assert result.output and "snow" not in result.output
