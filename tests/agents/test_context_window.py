"""Prompts kept within the model's context window (``RunOptions.fit_window``): the
policy alone, the services' overflow errors, and sessions and runs that outgrow a
small window on the fake servers, which refuse longer prompts as the services do."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from ratchet.agents import KeepLastTurns, OpenAIChatModel, RunContext, ToolCallingAgent, tool
from ratchet.agents._fit_window import FitWindow, kept
from ratchet.agents.models import AnthropicModel, known_window
from ratchet.client import AgentClient
from ratchet.errors import ContextOverflowError
from ratchet.testing import AnthropicServer, OpenAIServer
from ratchet.types import Message, PromptSize, ToolCall
from ratchet.wire import RunOptions, SessionOptions
from ratchet.worker import build_worker

from ..workflows.test_threads import raw_history

WINDOW = 8000
"""The fake servers' window, in tokens (three bytes of request body each)."""


def pages(steps: int, size: int = 400) -> list[Message]:
    messages = [Message.system("Be brief."), Message.user("Read the pages.")]
    for i in range(steps):
        call = ToolCall(id=f"c{i}", name="fetch", arguments=f'{{"page": {i}}}')
        messages += [Message.assistant(tool_calls=[call]), Message.tool(call, "x" * size)]
    return messages


def test_the_window_drops_old_tool_results_first_and_keeps_the_newest_turns_whole():
    messages = pages(20)  # about 2,100 tokens
    plan = FitWindow(keep_turns=4).plan(messages, [], window=2000)
    assert plan is not None
    shown = kept(messages, plan)
    assert len(shown) == len(messages)  # dropping results was enough
    notes = [m for m in shown if m.role == "tool" and m.text.startswith("[tool result dropped")]
    assert notes and shown[-8:] == messages[-8:]  # the newest four turns are whole
    assert all(shown[i].role == "tool" for i, d in enumerate(plan) if d[1])


def test_past_the_old_turns_it_leaves_out_turns_but_never_the_task_or_the_last_turn():
    messages = pages(20)
    plan = FitWindow().plan(messages, [Message.user("next")], window=300)
    assert plan is not None
    shown = kept(messages, plan)
    assert shown[:2] == messages[:2] and shown[-2:] == messages[-2:]
    assert len(shown) < 12
    # Every tool result still follows the call it answers.
    calls = {c.id for m in shown for c in m.tool_calls}
    assert all(m.tool_call_id in calls for m in shown if m.role == "tool")
    # Under the trigger nothing changes; a measured overhead counts towards it.
    assert FitWindow().plan(messages, [], window=10_000) is None
    measure = PromptSize(tokens=9_000, estimate=2_000)
    assert FitWindow().plan(messages, [], window=10_000, measure=measure) is not None


def test_a_target_above_the_trigger_is_refused():
    with pytest.raises(ValueError, match="target"):
        FitWindow(trigger=0.5, target=0.7)


def test_the_models_the_examples_use_have_known_windows():
    assert known_window("gpt-4o-mini") == 128_000
    assert known_window("gpt-4o-2024-08-06") == 128_000
    assert known_window("claude-sonnet-4-5-20250929") == 200_000
    assert known_window("my-local-model") is None
    assert OpenAIChatModel("gpt-4o-mini", api_key="k").context_window == 128_000
    assert OpenAIChatModel("my-local-model", api_key="k", context_window=32_000).prompt_window == (
        32_000
    )
    # A reply's room counts against the window with the prompt.
    assert AnthropicModel("claude-sonnet-4-5", api_key="k", max_tokens=4096).prompt_window == (
        200_000 - 4096
    )
    assert OpenAIChatModel("my-local-model", api_key="k").context_window is None


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    with OpenAIServer(context_window=WINDOW) as server:
        yield server


@pytest.fixture
def anthropic_server() -> Iterator[AnthropicServer]:
    with AnthropicServer(context_window=WINDOW) as server:
        yield server


LONG = [Message.user("y" * (4 * WINDOW))]


async def test_openai_overflow_errors_say_the_window_and_the_prompts_size(openai_server):
    model = OpenAIChatModel("gpt-test", base_url=openai_server.base_url, api_key="k")
    with pytest.raises(ContextOverflowError) as failure:
        await model.create(LONG, [], RunContext())
    assert failure.value.limit == WINDOW and failure.value.tokens > WINDOW
    assert not failure.value.retryable and "context_length_exceeded" not in str(failure.value)
    assert "maximum context length is 8000 tokens" in str(failure.value)


async def test_the_responses_api_overflow_is_recognised_without_numbers(openai_server):
    from ratchet.agents import OpenAIResponsesModel

    model = OpenAIResponsesModel("gpt-test", base_url=openai_server.base_url, api_key="k")
    with pytest.raises(ContextOverflowError) as failure:
        await model.create(LONG, [], RunContext())
    assert failure.value.limit is None and failure.value.tokens is None


async def test_anthropic_overflow_errors_say_the_window_and_the_prompts_size(anthropic_server):
    model = AnthropicModel("claude-test", base_url=anthropic_server.base_url, api_key="k")
    with pytest.raises(ContextOverflowError) as failure:
        await model.create(LONG, [], RunContext())
    assert failure.value.limit == WINDOW and failure.value.tokens > WINDOW
    # The other wording: the prompt and max_tokens together over the window.
    anthropic_server.error(
        400,
        "input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000, "
        "decrease input length or `max_tokens` and try again",
        type="invalid_request_error",
    )
    with pytest.raises(ContextOverflowError) as failure:
        await model.create([Message.user("hi")], [], RunContext())
    assert (failure.value.limit, failure.value.tokens) == (200_000 - 8192, 199_759)


def openai_agent(server: OpenAIServer, **model) -> ToolCallingAgent:
    chat = OpenAIChatModel("gpt-test", base_url=server.base_url, api_key="k", **model)
    return ToolCallingAgent(chat, instructions="Answer in one word.")


def anthropic_agent(server: AnthropicServer, **model) -> ToolCallingAgent:
    claude = AnthropicModel(
        "claude-test", base_url=server.base_url, api_key="k", max_tokens=500, **model
    )
    return ToolCallingAgent(claude, instructions="Answer in one word.")


SENDS = 30
NOTE = "z" * 1500  # each send adds about 500 tokens: the window is full within 20 sends


@pytest.mark.parametrize(
    "provider, window, policy",
    [
        # The window is not known: the service's refusal teaches it, once.
        ("openai", None, None),
        ("anthropic", None, None),
        # Declared larger than the service's: the refusal teaches it, once.
        ("openai", 1_000_000, None),
        # Known, with a policy of the user's that leaves the prompt too long.
        ("openai", WINDOW, KeepLastTurns(max_messages=200, turns=80)),
        ("anthropic", WINDOW, KeepLastTurns(max_messages=200, turns=80)),
    ],
)
async def test_a_session_past_the_window_keeps_answering_across_continue_as_new_and_a_fork(
    agent_client: AgentClient,
    openai_server: OpenAIServer,
    anthropic_server: AnthropicServer,
    provider: str,
    window: int | None,
    policy: KeepLastTurns | None,
):
    openai = provider == "openai"
    server = openai_server if openai else anthropic_server
    make = openai_agent if openai else anthropic_agent
    agent = make(server, context_window=window)  # type: ignore[arg-type]
    for _ in range(SENDS + 3):
        server.text("noted") if openai else server.message("noted")  # type: ignore[union-attr]
    options = SessionOptions(continue_as_new_after_runs=8, compaction=policy)
    async with build_worker(agent_client, {"notes": agent}):
        session = await agent_client.start_session("notes", options=options)
        for i in range(SENDS):
            reply = await session.send(f"note {i}: {NOTE}")
            assert reply.output == "noted"
        count = (await session.record()).session.thread.prompt
        fork = await agent_client.fork(session.id)
        assert count is not None and (await fork.record()).session.thread.prompt == count
        for i in range(3):
            assert (await fork.send(f"fork note {i}: {NOTE}")).output == "noted"
        thread = await session.thread()
    # Every send was answered; the log kept every message, the model saw a part.
    assert len(thread.messages) == 2 * SENDS
    assert [m.text for m in thread.messages[::2]] == [f"note {i}: {NOTE}" for i in range(SENDS)]
    assert len(thread.visible()) < len(thread.messages)
    answered = [r for r in server.requests if r.tokens is not None and r.tokens <= WINDOW]
    assert len(answered) == SENDS + 3
    # Learnt from the service's first refusal, the window holds across continue-as-new
    # and into the fork; a window known right is never passed.
    assert server.refused == (0 if window == WINDOW else 1)


def pager(server: OpenAIServer, steps: int) -> ToolCallingAgent:
    @tool
    def fetch(page: int) -> str:
        """Fetch a page."""
        return f"<page-{page}>" + "p" * 2000

    for i in range(steps):
        server.tool_calls((f"call_{i}", "fetch", json.dumps({"page": i})))
    server.text("done")
    chat = OpenAIChatModel("gpt-test", base_url=server.base_url, api_key="k")
    return ToolCallingAgent(chat, [fetch], instructions="Read every page.")


async def test_a_run_whose_tool_loop_outgrows_the_window_finishes(
    agent_client: AgentClient, openai_server: OpenAIServer
):
    steps = 24  # 24 pages of 2 KB: six windows' worth
    async with build_worker(agent_client, {"pager": pager(openai_server, steps)}):
        handle = await agent_client.start_run(
            "pager", "Read the pages.", options=RunOptions(max_turns=steps + 2)
        )
        result = await handle.result()
        state = await handle.record()
    assert result.output == "done" and result.turns == steps + 1
    assert openai_server.refused == 1  # then the window is known: the thread is cut ahead
    # The run's view of its log was cut down too; the log and history hold every page once.
    thread = state.session.thread
    assert len(thread.visible()) < len(thread.messages) and thread.prompt is not None
    assert thread.visible()[0].text == "Read the pages."
    assert sum(m.role == "tool" for m in thread.messages) == steps
    raw = await raw_history(handle)
    assert all(raw.count(f"<page-{i}>".encode()) == 1 for i in range(steps))


async def test_a_prompt_too_long_to_cut_fails_the_run_saying_what_to_do(
    agent_client: AgentClient, openai_server: OpenAIServer
):
    agent = openai_agent(openai_server)
    async with build_worker(agent_client, {"notes": agent}):
        with pytest.raises(ContextOverflowError) as failure:
            await agent_client.run("notes", "w" * (4 * WINDOW))
        with pytest.raises(ContextOverflowError, match="fit_window is None"):
            await agent_client.run("notes", "w" * (4 * WINDOW), options=RunOptions(fit_window=None))
    assert "Make the prompt smaller" in str(failure.value)
    assert openai_server.refused == 2  # once each: nothing to cut, so not asked again
