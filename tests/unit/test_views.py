"""Working views of a thread's log (ratchet/agents/_views.py): which positions a
view shows, how a failed send leaves it, and what compaction keeps in it."""

from __future__ import annotations

import random

from ratchet.agents._views import (
    materialize,
    normalize,
    positions,
    ranges,
    render,
    spans_of,
    view_of,
    without,
)

from ratchet.agents import ScriptedModel
from ratchet.agents._compaction import DropToolResults, KeepLastTurns, Summarize, compact
from ratchet.types import Message, Span


def S(start: int, end: int | None = None, drop: bool = False) -> Span:
    return Span(start=start, end=end, drop=drop)


def shown_by(view: list[Span], upto: int) -> list[int]:
    return [p for p, _ in positions(view, upto)]


def test_normalize_drops_empty_spans_and_merges_neighbours_of_one_kind():
    assert normalize([S(0, 2), S(2, 2), S(2, 5), S(5, 6, True), S(6, 8, True), S(8)]) == [
        S(0, 5),
        S(5, 8, True),
        S(8),
    ]
    assert normalize([S(0, 2), S(3, 4)]) == [S(0, 2), S(3, 4)]  # a gap stays a gap
    assert normalize([S(4, 3), S(5)]) == [S(5)]
    assert normalize([]) == []


def test_a_view_shows_its_positions_in_order_up_to_the_logs_length():
    view = [S(0, 1), S(4, 6, True), S(8)]
    assert positions(view, 10) == [(0, False), (4, True), (5, True), (8, False), (9, False)]
    assert positions(view, 5) == [(0, False), (4, True)]  # the log holds 5 so far
    assert ranges(view, 10) == [(0, 1), (4, 6), (8, 10)]
    assert ranges([S(3), S(0, 5)], 8) == [(0, 8)]  # sorted and merged
    assert ranges([S(0, 2), S(2, 4, True)], 8) == [(0, 4)]  # side by side: one range
    assert ranges([S(9)], 8) == []


def test_render_gives_the_shown_messages_with_dropped_tool_results_as_notes():
    call = ScriptedModel.call("fetch").tool_calls[0]
    log = [Message.user("task"), Message.assistant(tool_calls=[call])]
    log += [Message.tool(call, "x" * 500), Message.assistant("done")]
    messages, shown = render([S(0, 2), S(2, 3, True), S(3)], 4, log.__getitem__)
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[2].text == "[tool result dropped to save context: 500 characters]"
    assert log[2].text == "x" * 500  # the log keeps it whole
    assert spans_of(shown) == [S(0, 2), S(2, 3, True), S(3, 4)]
    assert materialize([(3, True)], log.__getitem__) == [log[3]]  # only tool results drop


def test_a_failed_sends_messages_leave_the_view_and_later_ones_still_join_it():
    assert without([S(0)], 5, 8) == [S(0, 5), S(8)]
    assert shown_by(without([S(0)], 5, 8), 10) == [0, 1, 2, 3, 4, 8, 9]
    assert without([S(0, 2), S(6)], 6, 9) == [S(0, 2), S(9)]
    assert without([S(0, 3, True), S(3)], 2, 4) == [S(0, 2, True), S(4)]  # a drop keeps its flag
    assert without([S(0, 4)], 4, 6) == [S(0, 4), S(6)]  # a closed view is opened again


def test_any_view_without_a_range_shows_the_same_positions_less_that_range():
    rng = random.Random(42)
    for _ in range(500):
        view, at = [], 0
        for _ in range(rng.randint(0, 5)):
            at += rng.randint(0, 3)
            end = at + rng.randint(1, 4)
            view.append(S(at, end, rng.random() < 0.3))
            at = end
        view.append(S(at + rng.randint(0, 2)))
        start = rng.randint(0, at + 3)
        end = start + rng.randint(0, 4)
        upto = end + rng.randint(0, 5)
        cut = without(view, start, end)
        expected = [(p, d) for p, d in positions(view, upto) if not start <= p < end]
        assert positions(cut, upto) == expected, (view, start, end)
        assert cut[-1].end is None  # what is appended later joins the view


def test_the_view_after_compaction_is_what_it_kept_then_the_note_then_the_new_messages():
    kept = [(0, False), (1, False), (6, True), (7, False)]
    assert view_of(kept, 9) == [S(0, 2), S(6, 7, True), S(7, 8), S(9)]
    # A summary note appended at 9 is shown after the pinned messages, not at the end.
    assert view_of([(0, False), (9, False), (7, False)], 9, note=9) == [
        S(0, 1),
        S(9, 10),
        S(7, 8),
        S(10),
    ]


def conversation(turns: int) -> list[Message]:
    call = ScriptedModel.call("fetch").tool_calls[0]
    messages = [Message(role="system", content="be brief"), Message.user("the task")]
    for i in range(turns):
        messages += [Message.assistant(tool_calls=[call]), Message.tool(call, f"{i}" * 400)]
    return messages + [Message.assistant("done")]


def test_compaction_within_budget_or_with_nothing_older_changes_nothing():
    messages = conversation(2)
    shown = [(p, False) for p in range(len(messages))]
    assert compact(KeepLastTurns(max_messages=100), messages, shown) is None
    assert compact(KeepLastTurns(max_messages=2, turns=10), messages, shown) is None


def test_keep_last_turns_pins_the_system_prompt_and_task_and_keeps_the_newest_turns():
    messages = conversation(3)  # 2 pinned, 3 turns of 2 messages, then the answer
    shown = [(p, False) for p in range(len(messages))]
    kept = compact(KeepLastTurns(max_messages=4, turns=2), messages, shown)
    assert kept is not None
    assert kept.pinned == [(0, False), (1, False)]
    assert kept.rest == [(6, False), (7, False), (8, False)]  # a call with its result
    assert kept.older == []  # nothing to summarise


def test_drop_tool_results_flags_the_older_results_once():
    messages = conversation(3)
    shown = [(p, False) for p in range(len(messages))]
    policy = DropToolResults(max_messages=4, keep_turns=1)
    kept = compact(policy, messages, shown)
    assert kept is not None
    assert kept.rest == [(2, True), (3, True), (4, True), (5, True), (6, True), (7, True)] + [
        (8, False)
    ]
    assert compact(policy, messages, kept.pinned + kept.rest) is None  # dropped already


def test_summarize_hands_over_the_older_messages_and_keeps_the_recent_ones():
    messages = conversation(3)
    shown = [(p + 10, False) for p in range(len(messages))]  # a view further down a log
    kept = compact(Summarize(max_messages=4, keep_turns=1), messages, shown)
    assert kept is not None
    assert kept.older == messages[2:8] and kept.rest == [(18, False)]
    assert kept.view(version=19, note=19) == [S(10, 12), S(19, 20), S(18, 19), S(20)]
