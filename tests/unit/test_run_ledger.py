"""RunLedger (ratchet/workflows/_ledger.py): the one place a run's execution
changes, so that every observer hears of each change. In-process: ``append`` and
``record_turn`` stamp workflow time (``workflow.now()``), and ``initial_session``
draws workflow ids for a new session or nameless messages, so those are tested
through runs (tests/workflows)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from temporalio.exceptions import ApplicationError

from ratchet.types import (
    AgentRecord,
    AgentSession,
    AgentStatus,
    ExecutionRecord,
    Message,
    StateEntry,
    Usage,
)
from ratchet.wire import RunOptions
from ratchet.wire._session_data import KEY_CHARS
from ratchet.workflows._ledger import ExecutionChange, RunLedger, initial_session
from ratchet.workflows._log_index import LogIndexer

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def ledger(heard: list[ExecutionChange], shown: list[str]) -> RunLedger:
    session = AgentSession.new("a", T0, session_id="s", thread_id="t")
    state = AgentRecord(session=session, execution=ExecutionRecord.start("e-1", T0))
    return RunLedger("a", state, observers=[heard.append], show=shown.append)


def test_every_change_of_the_execution_is_heard_with_what_it_was_before():
    heard: list[ExecutionChange] = []
    run = ledger(heard, [])
    first = run.execution
    run.add_usage(Usage(requests=1, input_tokens=10))
    run.add_usage(Usage(requests=1, output_tokens=5))
    assert run.execution.usage == Usage(requests=2, input_tokens=10, output_tokens=5)
    assert [c.old for c in heard] == [first, heard[0].new]
    assert heard[-1].new == run.execution and heard[-1].agent == "a"
    assert heard[-1].thread == run.thread


def test_a_waiting_run_says_what_for_until_its_status_changes_again():
    heard: list[ExecutionChange] = []
    shown: list[str] = []
    run = ledger(heard, shown)
    run.set_status(AgentStatus.AWAITING_APPROVAL, waiting=["pay(amount=10)"])
    assert run.execution.status == AgentStatus.AWAITING_APPROVAL
    assert heard[-1].waiting == ["pay(amount=10)"] and run.waiting == ["pay(amount=10)"]
    assert "**Waiting for** (AWAITING_APPROVAL):" in shown[-1] and "- pay(amount=10)" in shown[-1]
    run.waiting.append("not mine")  # a copy
    assert run.waiting == ["pay(amount=10)"]
    run.set_status(AgentStatus.RUNNING)
    assert heard[-1].waiting == [] and run.waiting == []
    assert "Waiting for" not in shown[-1]


def test_a_failed_run_is_marked_shown_and_raised_not_to_be_retried():
    heard: list[ExecutionChange] = []
    shown: list[str] = []
    run = ledger(heard, shown)
    with pytest.raises(ApplicationError) as failed:
        run.fail("MaxTurnsExceededError", "Agent 'a' reached max_turns=3.")
    assert failed.value.type == "MaxTurnsExceededError" and failed.value.non_retryable
    assert heard[-1].new.status == AgentStatus.FAILED
    assert "reached max_turns=3" in shown[-1]


def test_reset_forgets_the_execution_and_what_it_waited_for():
    run = ledger([], [])
    run.set_status(AgentStatus.AWAITING_INPUT, waiting=["which city?"])
    run.reset()
    assert run.state.execution is None and run.waiting == []
    assert run.state.status == AgentStatus.PENDING


def test_messages_held_as_one_batch_reach_the_log_index_when_there_is_one():
    run = ledger([], [])
    batch = [Message(role="user", content="hi", id="m1")]
    run.held(batch)  # no index (a single run): nothing to do
    run.index = LogIndexer(start=0)
    run.held(batch)
    run.index.appended(batch)
    assert run.index.bytes == KEY_CHARS  # one batch key, not the message itself


def test_a_given_session_starts_with_the_given_thread_and_state_whose_origin_is_dropped():
    session = AgentSession.new("a", T0, session_id="s", thread_id="t-given")
    thread = [Message(role="user", content="earlier", id="m1")]
    state = {"plan": StateEntry(data=[1], version=3, origin="turn-9")}
    started = initial_session("a", RunOptions(), session=session, thread=thread, state=state)
    assert started.thread.id == "t-given" and started.thread.messages == thread
    assert started.state == {"plan": StateEntry(data=[1], version=3)}  # no worker cached it
    assert started.info == session.info
    kept = initial_session("a", RunOptions(), session=started, thread=None, state=None)
    assert kept == started
