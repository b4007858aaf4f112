"""What a run leaves in its history for readers of closed runs
(ratchet/wire/_run_record.py): its marks stored compactly, and finding and settling
the mark a fork starts from. (Compaction's bound: tests/workflows/test_closed_run_reads.py.)"""

from __future__ import annotations

from ratchet.types import Message, StateEntry, ToolCall
from ratchet.wire._run_record import (
    RunRecord,
    TurnMark,
    compact_marks,
    find_mark,
    holds_turn,
    settled,
)


def mark(turn: int, length: int, state: str | None = None, **fields) -> TurnMark:
    entries = {"k": StateEntry(data=state)} if state is not None else {}
    return TurnMark(turn=turn, length=length, agent="a", state=entries, **fields)


def test_a_state_that_changes_is_stored_at_each_change_and_an_empty_one_never_repeated():
    marks = [mark(0, 0), mark(1, 2), mark(2, 4, "x"), mark(3, 6, "x"), mark(4, 8, "y")]
    record = compact_marks(marks)
    assert record.same_state == [3]  # empty states are not worth a reference
    assert record.marks[3].state == {} and record.marks[4].state == marks[4].state
    assert record.full_marks() == marks
    assert RunRecord.model_validate_json(record.model_dump_json()).full_marks() == marks


def test_a_record_of_no_marks_starts_at_turn_zero():
    assert compact_marks([]) == RunRecord()
    assert compact_marks([mark(5, 10), mark(6, 12)]).turns_from == 5


def messages(*ids: str) -> list[Message]:
    out = []
    for i in ids:
        m = Message.user(i)
        m.id = i
        out.append(m)
    return out


def test_the_mark_after_a_turn_or_after_the_turn_that_added_a_message():
    marks = [mark(3, 10), mark(4, 12), mark(5, 14)]
    log = messages(*(f"m{p}" for p in range(10, 14)))  # this run's part, from position 10
    found = lambda **kw: find_mark(marks, messages=log, offset=10, **kw)  # noqa: E731
    assert found(turn=None, message=None) == (marks[-1], False)  # the latest
    assert found(turn=4, message=None) == (marks[1], False)
    assert found(turn=9, message=None) == (None, False)  # not there: no earlier run has it
    assert found(turn=2, message=None) == (None, True)  # before this run: ask the one before
    assert found(turn=None, message="m10") == (marks[1], False)  # turn 4 added it
    assert found(turn=None, message="m13") == (marks[2], False)
    assert found(turn=None, message="m9") == (None, True)  # not in this run's part
    # A record whose oldest marks were dropped still knows where its run started.
    assert find_mark(marks, turn=2, message=None, messages=log, offset=10, turns_from=1) == (
        None,
        False,
    )


def test_a_marks_open_calls_are_settled_by_the_results_right_after_it():
    one, two = ToolCall(id="c1", name="a"), ToolCall(id="c2", name="b")
    results = [Message.tool(one, "1"), Message.tool(two, "2"), Message.user("next")]
    for i, m in enumerate(results):
        m.id = f"r{i}"
    open_mark = mark(1, 5, last_id="call", open_calls=[one, two])
    done = settled(open_mark, results, offset=5)
    assert done is not None and (done.length, done.last_id, done.open_calls) == (7, "r1", [])
    half = settled(open_mark, results[1:], offset=6)  # the log holds only position 6 on
    assert half is not None and half.length == 5 and half.open_calls == [one, two]
    only_one = settled(open_mark, [results[0], results[2]], offset=5)
    assert only_one is not None and (only_one.length, only_one.open_calls) == (6, [two])
    other = Message.tool(ToolCall(id="c9", name="c"), "another call's")
    assert settled(open_mark, [other, *results], offset=5) == open_mark  # not its results
    assert settled(mark(1, 5), results, offset=5) == mark(1, 5)
    assert settled(None, results, offset=5) is None


def test_a_record_holds_a_turn_from_its_oldest_mark_on():
    record = RunRecord(marks=[mark(4, 8), mark(5, 10)])
    assert holds_turn(record, None) and holds_turn(record, 4) and holds_turn(record, 9)
    assert not holds_turn(record, 3)
    assert not holds_turn(RunRecord(), None)
