"""TurnInputs (ratchet/workflows/_turn_scheduling.py): what a turn's activity is
given. In-process, only a turn without new messages: new messages join the log
first (``RunLedger.append`` stamps ``workflow.now()``), and an ``AgentStateKeeper``
installs its registry's query handler as it is made, so ``keeper`` below builds one
around that. The new-message path is tested through runs (tests/workflows/test_threads.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ratchet.agents import FitWindow
from ratchet.agents._compaction import DropToolResults
from ratchet.errors import ShareTokenError
from ratchet.types import (
    AgentRecord,
    AgentSession,
    ExecutionRecord,
    Message,
    PromptSize,
    ShareToken,
    Span,
    StateConflict,
    StateEntry,
    ThreadBase,
    ThreadData,
    id_tag,
)
from ratchet.wire import RunOptions
from ratchet.wire._turn_data import ThreadRef
from ratchet.workflows._ledger import RunLedger
from ratchet.workflows._state_commits import AgentStateKeeper, StateRegistry
from ratchet.workflows._turn_scheduling import TurnInputs, TurnSetup

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def keeper(ledger: RunLedger, registry: StateRegistry, shared=()) -> AgentStateKeeper:
    """An ``AgentStateKeeper`` on ``registry``, as its ``__init__`` makes one but for
    installing the registry's query handler (which needs a running workflow)."""
    states = AgentStateKeeper.__new__(AgentStateKeeper)
    states._ledger, states._hooks, states.shared = ledger, [], list(shared)
    states.conflicts, states.undelivered = [], []
    states._registry = registry
    registry.register(states)
    return states


def ledger_of(agent: str, thread: ThreadData, state: dict[str, StateEntry]) -> RunLedger:
    session = AgentSession.new(agent, T0, session_id=f"session-{agent}", thread_id=thread.id)
    session = session.model_copy(update={"thread": thread, "state": state})
    execution = ExecutionRecord.start(f"{agent}-run", T0)
    return RunLedger(agent, AgentRecord(session=session, execution=execution), show=print)


THREAD = ThreadData(
    id="t",
    kind="openai_responses",
    cursor="resp_7",
    base=ThreadBase(workflow_id="s", run_id="r1", version=40, last_id="m39"),
    messages=[Message(role="assistant", content="hi", id="m40")],
    view=[Span(start=0, end=2), Span(start=30)],
    prompt=PromptSize(tokens=900, estimate=700),
)
STATE = {
    "plan": StateEntry(data=None, version=3, origin="write-9"),  # a worker cached it
    "note": StateEntry(data="inline", version=1),
}


def inputs(options: RunOptions, *, live_events: bool = True) -> TurnInputs:
    ledger = ledger_of("a", THREAD, STATE)
    return TurnInputs(TurnSetup(options, live_events), ledger, keeper(ledger, StateRegistry()))


def test_a_turn_names_its_thread_as_it_stands_before_the_turn():
    options = RunOptions(compaction=DropToolResults(max_messages=50), fit_window=None)
    turn = inputs(options).build(3, [])
    assert turn.thread == ThreadRef(
        id="t", length=41, last_tag=id_tag("m40"), kind="openai_responses", cursor="resp_7"
    )
    assert (turn.agent, turn.execution_id, turn.turn) == ("a", "a-run", 3)
    assert turn.view == THREAD.view and turn.prompt == THREAD.prompt
    assert (turn.new_count, turn.new_messages, turn.new_last_tag) == (0, [], None)
    assert turn.compaction == options.compaction and turn.fit_window is None
    assert turn.events


def test_a_turn_takes_cached_state_by_reference_unless_it_runs_as_a_local_activity():
    turn = inputs(RunOptions()).build(1, [])
    assert turn.state == {"note": STATE["note"]} and turn.state_refs == {"plan": "write-9"}
    assert turn.session_id == "session-a"
    fast = inputs(RunOptions(fast=True)).build(1, [])
    assert fast.state == STATE and fast.state_refs == {} and fast.session_id == ""
    assert not fast.events  # a local activity holds the workflow task its signals need
    assert not inputs(RunOptions(), live_events=False).build(1, []).events


def test_an_empty_thread_has_no_last_tag_and_inline_state_needs_no_session():
    ledger = ledger_of("a", ThreadData(id="t0"), {"k": StateEntry(data=1)})
    turn = TurnInputs(TurnSetup(RunOptions(), True), ledger, keeper(ledger, StateRegistry()))
    built = turn.build(1, [])
    assert built.thread == ThreadRef(id="t0", length=0) and built.fit_window == FitWindow()
    assert built.state == {"k": StateEntry(data=1)} and built.session_id == ""


def test_a_turn_is_given_its_last_conflict_and_the_keys_shared_with_it():
    registry = StateRegistry()
    owner = ledger_of("planner", ThreadData(id="tp"), {"plan": StateEntry(data=[1], version=2)})
    owner_states = keeper(owner, registry)
    (token,) = owner_states.grant([ShareToken(id="tok", owner="", agent="planner", key="plan")])
    assert token.owner == "session-planner"
    ledger = ledger_of("a", THREAD, {})
    states = keeper(ledger, registry, shared=[token])
    conflict = StateConflict(
        agent="a", turn=2, key="plan", owner_agent="planner", expected_version=1, actual_version=2
    )
    states.undelivered = [conflict]
    turn = TurnInputs(TurnSetup(RunOptions(), True), ledger, states).build(3, [])
    assert turn.conflicts == [conflict]
    assert [(s.token, s.entry) for s in turn.shared] == [(token, StateEntry(data=[1], version=2))]
    forged = token.model_copy(update={"id": "not-granted"})
    stranger = keeper(ledger_of("b", ThreadData(id="tb"), {}), registry, shared=[forged])
    with pytest.raises(ShareTokenError, match="was not granted in this workflow"):
        TurnInputs(TurnSetup(RunOptions(), True), stranger._ledger, stranger).build(1, [])
