"""What a session counts and shows (ratchet/workflows/_session_view.py). In-process:
``SessionDisplay.show`` writes search attributes and workflow details, so it is
tested through sessions (tests/client/test_observability.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from ratchet.types import AgentSession, Message, Span, StateEntry, ThreadBase, ThreadData
from ratchet.wire._session_data import SessionInput, SessionStatus
from ratchet.workflows._session_view import SessionTotals, position, rolled_back, session_markdown

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_totals_carried_over_continue_as_new_start_this_runs_counters_at_zero():
    input = SessionInput(agent="b", runs=4, used_tokens=900, turns=12, cost_usd=0.5)
    totals = SessionTotals.carried(input)
    assert (totals.agent, totals.runs, totals.used_tokens, totals.turns) == ("b", 4, 900, 12)
    assert totals.cost_usd == 0.5 and totals.last_execution is None
    assert totals.runs_this_workflow_run == 0 and totals.updates_this_workflow_run == 0


def test_a_sessions_details_say_what_runs_what_waits_and_its_rules():
    idle = SessionStatus(agent="helper", status="PENDING", runs=2, turns=5, used_tokens=70)
    assert session_markdown(idle, "PENDING") == (
        "**helper** session · PENDING · 2 runs · 5 turns · 70 tokens"
    )
    busy = idle.model_copy(
        update={
            "current_run": "s-run-3",
            "waiting": 2,
            "approval_rules": ["allow search", "deny pay"],
            "waiting_for": ["pay(amount=10)"],
        }
    )
    assert session_markdown(busy, "AWAITING_APPROVAL").splitlines()[1:] == [
        "Run in progress: `s-run-3`",
        "2 message(s) queued behind it",
        "Approval rules of this session: allow search · deny pay",
        "",
        "**Waiting for** (AWAITING_APPROVAL):",
        "- pay(amount=10)",
    ]


def test_a_failed_run_is_taken_back_from_the_view_state_and_cursor_but_not_the_log():
    messages = [Message(role="user", content=str(i), id=f"m{i}") for i in range(6)]
    session = AgentSession.new("a", T0, session_id="s", thread_id="t").model_copy(
        update={
            "thread": ThreadData(id="t", messages=messages, cursor="resp-9", view=[Span(start=0)]),
            "state": {"k": StateEntry(data="after", version=2)},
        }
    )
    before = {"k": StateEntry(data="before")}
    back = rolled_back(session, 4, [Span(start=0)], "resp-3", before)
    assert back.thread.messages == messages  # the log (and history) keep them
    assert back.thread.view == [Span(start=0, end=4), Span(start=6)]
    assert back.thread.cursor == "resp-3" and back.state == before
    assert session.thread.cursor == "resp-9"  # a copy


def test_a_messages_position_counts_the_messages_of_earlier_runs():
    base = ThreadBase(workflow_id="s", run_id="r1", version=10, last_id="m9")
    messages = [Message(role="user", content=str(i), id=f"m{i}") for i in range(10, 13)]
    thread = ThreadData(id="t", messages=messages, base=base)
    assert position(thread, messages[1]) == 11
    assert position(thread, Message(role="user", content="10", id="m10")) == 10  # by id
    assert position(thread, Message(role="user", content="x", id="elsewhere")) is None
    assert position(thread, None) is None
