"""Tools and ToolCallingAgent, without Temporal."""

from __future__ import annotations

from ratchet.agents import ChatMessageThread, RunContext, ScriptedModel, ToolCallingAgent, tool
from ratchet.errors import ScriptExhaustedError
from ratchet.types import Message, ToolCall


@tool
def forecast(city: str, days: int = 1, context: RunContext | None = None) -> dict:
    """Forecast for a city.

    Longer text that is not part of the description.
    """
    return {"city": city, "days": days}


def test_schema_comes_from_type_hints_and_hides_the_context():
    spec = forecast.spec()["function"]
    assert spec["name"] == "forecast"
    assert spec["description"] == "Forecast for a city."
    assert spec["parameters"]["required"] == ["city"]
    assert set(spec["parameters"]["properties"]) == {"city", "days"}


async def test_wrong_argument_types_become_an_error_message():
    call = ToolCall(id="c1", name="forecast", arguments='{"city": "Oslo", "days": "many"}')
    reply = await forecast.invoke(call, RunContext())
    assert reply.is_error and reply.tool_call_id == "c1"
    assert "days: Input should be a valid integer" in reply.text


async def test_tool_exceptions_become_an_error_message():
    @tool
    def broken() -> str:
        """Always fails."""
        raise RuntimeError("disk full")

    reply = await broken.invoke(ToolCall(id="c1", name="broken"), RunContext())
    assert reply.is_error and "RuntimeError: disk full" in reply.text


async def test_retried_turn_reuses_steps_an_earlier_attempt_finished():
    calls: list[str] = []

    @tool
    def charge(amount: int) -> str:
        """Charge a card."""
        calls.append(f"charge {amount}")
        return "charged"

    model = ScriptedModel([ScriptedModel.call("charge", amount=5)])
    agent = ToolCallingAgent(model, [charge])
    recorded: dict = {}
    first = RunContext(checkpoint=recorded.update)
    await agent.run([Message.user("pay")], ChatMessageThread(), first)
    assert calls == ["charge 5"] and model.requests == 1

    retry = RunContext(attempt=2, completed=dict(recorded))
    thread = ChatMessageThread()
    await agent.run([Message.user("pay")], thread, retry)
    assert calls == ["charge 5"] and model.requests == 1
    assert [m.text for m in thread.messages if m.role == "tool"] == ["charged"]


async def test_scripted_model_fails_loudly():
    model = ScriptedModel(["only reply"])
    try:
        model.assert_consumed()
    except AssertionError as e:
        assert "1 of 1 replies were never used" in str(e)
    else:
        raise AssertionError("assert_consumed passed with an unused reply")
    convo = [Message.user("a"), Message.assistant("b"), Message.user("c")]
    try:
        await model.create(convo, [], RunContext())
    except ScriptExhaustedError as e:
        assert "has 1 replies but was asked for reply 2" in str(e)
    else:
        raise AssertionError("an exhausted script answered")


def test_idempotency_keys_differ_between_runs_in_one_workflow():
    first = RunContext(run_id="wf-1", execution_id="exec-a", turn=1)
    second = RunContext(run_id="wf-1", execution_id="exec-b", turn=1)
    retry = RunContext(run_id="wf-1", execution_id="exec-a", turn=1, attempt=2)
    assert first.idempotency_key("call_0_0") == retry.idempotency_key("call_0_0")
    assert first.idempotency_key("call_0_0") != second.idempotency_key("call_0_0")


async def test_scripted_model_awaits_an_async_script_function():
    async def script(messages, context: RunContext):
        return ScriptedModel.call("lookup", q="x") if context.turn == 1 else "done"

    model = ScriptedModel(script)
    first = await model.create([Message.user("a")], [], RunContext(turn=1))
    assert first.message.tool_calls[0].name == "lookup"
    second = await model.create([Message.user("a")], [], RunContext(turn=2))
    assert second.message.content == "done"
