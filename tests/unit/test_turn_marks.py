"""Turn marks (ratchet/workflows/_marks.py): where a thread stood after each turn,
for forks and checkpoints. In-process: ``TurnMarks.answer`` names its workflow run
(``workflow.info()``), so it is tested through forks (tests/workflows/test_fork.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from ratchet.types import (
    AgentSession,
    ExecutionRecord,
    Message,
    StateEntry,
    StepResult,
    ThreadData,
    ToolCall,
)
from ratchet.workflows._ledger import ExecutionChange
from ratchet.workflows._marks import TurnMarks, turn_mark

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CALL = ToolCall(id="c1", name="pay")


def with_ids(*messages: Message) -> list[Message]:
    for i, m in enumerate(messages):
        m.id = m.id or f"m{i}"
    return list(messages)


def session_with(messages: list[Message], state: str = "s0") -> AgentSession:
    session = AgentSession.new("a", T0, session_id="s", thread_id="t")
    thread = ThreadData(id="t", messages=messages)
    return session.model_copy(update={"thread": thread, "state": {"k": StateEntry(data=state)}})


def test_a_mark_names_the_calls_its_turn_left_without_a_result():
    call2 = ToolCall(id="c2", name="look")
    log = with_ids(
        Message.user("task"),
        Message.assistant(tool_calls=[CALL, call2]),
        Message.tool(call2, "seen"),
    )
    mark = turn_mark(1, session_with(log), "a", added=[log[1].id, log[2].id])
    assert (mark.turn, mark.length, mark.last_id) == (1, 3, log[2].id)
    assert mark.open_calls == [CALL] and mark.state == {"k": StateEntry(data="s0")}
    assert turn_mark(0, session_with(log), "a").open_calls == []  # before any turn


def changed(old: ExecutionRecord | None, turns: int, added: list[str] = []) -> ExecutionChange:  # noqa: B006
    steps = [
        StepResult(turn=t, started_at=T0, completed_at=T0, message_ids=added)
        for t in range(1, turns + 1)
    ]
    new = ExecutionRecord(execution_id="e", started_at=T0, step_results=steps)
    return ExecutionChange("a", old, new, ThreadData(id="t"))


def test_only_a_completed_turn_is_marked_numbered_after_the_earlier_runs_turns():
    log = with_ids(Message.user("task"))
    current = [session_with(log)]
    marks = TurnMarks(turn_mark(5, current[0], "a"), lambda: current[0], lambda: 5)
    start = changed(None, 0)
    marks(start)  # the run started
    marks(changed(start.new, 0))  # a status change
    current[0] = session_with(with_ids(*log, Message.assistant("one")), state="s1")
    marks(changed(start.new, 1))
    record = marks.record(current[0].thread)
    assert [(m.turn, m.length) for m in record.full_marks()] == [(5, 1), (6, 2)]
    assert record.turns_from == 5 and record.thread_id == "t"


def test_a_run_records_its_marks_settled_against_its_log():
    log = with_ids(Message.user("task"), Message.assistant(tool_calls=[CALL]))
    current = [session_with(log)]
    marks = TurnMarks(turn_mark(0, session_with(log[:1]), "a"), lambda: current[0])
    marks(changed(changed(None, 0).new, 1, [log[1].id]))  # turn 1 asked to pay: it waits
    assert marks.record(current[0].thread).marks[-1].open_calls == [CALL]
    approved = with_ids(*log, Message.tool(CALL, "paid"))
    record = marks.record(ThreadData(id="t", messages=approved))
    last = record.full_marks()[-1]
    assert last.open_calls == [] and last.length == 3 and last.last_id == approved[2].id
    assert record.same_state == [1]  # the state did not change: stored once
