"""FitWindow (ratchet/agents/_fit_window.py): what a turn reports of its prompt and
the window it learns from a refusal; plan edge cases. (The plan's order of cuts:
tests/agents/test_context_window.py.)"""

from __future__ import annotations

from ratchet.agents._fit_window import FitWindow, measured, refused
from ratchet.errors import ContextOverflowError
from ratchet.types import Message, PromptSize, ToolCall, Usage


def test_a_turn_reports_its_calls_average_prompt_only_when_a_window_will_read_it():
    usage = Usage(requests=3, input_tokens=3000)
    assert measured(usage, 800, 8000, 8000) == PromptSize(
        tokens=1000, estimate=800, window=None, declared=8000
    )
    # A window learnt from a refusal, lower than the declared one, is carried.
    assert measured(usage, 800, 6000, 8000) == PromptSize(
        tokens=1000, estimate=800, window=6000, declared=8000
    )
    assert measured(usage, 800, 6000, None) == PromptSize(tokens=1000, estimate=800, window=6000)
    assert measured(usage, 800, None, None) is None  # nothing would read it
    assert measured(Usage(), 800, 8000, 8000) is None  # no model call
    assert measured(Usage(requests=1), 800, 8000, 8000) is None  # it reported no tokens


def test_a_refused_prompt_is_counted_as_the_service_counted_it():
    said = ContextOverflowError("too long", limit=4000, tokens=5200)
    assert refused(said, 3000, 8000, None) == PromptSize(tokens=5200, estimate=3000, window=4000)
    # The window in force stays when lower than what the service said.
    assert refused(said, 3000, 3500, None).window == 3500


def test_a_refusal_that_says_nothing_counts_the_prompt_as_just_over_the_window():
    silent = ContextOverflowError("too long")
    measure = PromptSize(tokens=1500, estimate=1000)  # 500 tokens the estimate misses
    assert refused(silent, 3000, 8000, measure) == PromptSize(
        tokens=8001, estimate=3000, window=8000
    )
    assert refused(silent, 9000, 8000, measure).tokens == 9500  # the guess is over already
    # With no window known at all, the guess is the window.
    assert refused(silent, 3000, None, None) == PromptSize(tokens=3001, estimate=3000, window=3000)
    assert refused(silent, 0, None, None).window == 1


def test_a_plan_that_cannot_cut_anything_is_none():
    task = [Message.system("s" * 4000), Message.user("u" * 4000)]
    assert FitWindow().plan(task, [], window=100) is None  # pinned: never cut
    call = ToolCall(id="c", name="f")
    one_turn = [*task, Message.assistant(tool_calls=[call]), Message.tool(call, "x" * 4000)]
    assert FitWindow().plan(one_turn, [], window=100) is None  # the last turn always stays


def test_a_turns_call_and_its_results_leave_together():
    calls = [ToolCall(id=f"c{i}", name="f") for i in range(3)]
    messages = [Message.user("task")]
    for call in calls:
        messages += [Message.assistant("t" * 400, tool_calls=[call]), Message.tool(call, "r")]
    plan = FitWindow(keep_turns=1, trigger=0.5, target=0.2).plan(messages, [], window=300)
    assert plan is not None
    kept = [i for i, _ in plan]
    assert kept == [0, 5, 6]  # both older turns went whole
