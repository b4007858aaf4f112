"""Pending work (ratchet/workflows/_pending_calls.py): which decisions a run takes
and how it keeps them. In-process, only the parts that read no workflow clock:
``PendingWork`` and its ``ClientCalls`` note ``workflow.now()`` as they are made,
and ``validate`` names the run (``workflow.info()``), so the validator's wiring and
the waits are tested through runs (tests/workflows/test_approvals.py,
test_approval_policies.py); the rules the validator applies are tested here."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from temporalio.exceptions import ApplicationError

from ratchet.types import (
    DECISIONS_KEPT,
    AgentRecord,
    AgentSession,
    ApprovalRules,
    Decision,
    PendingAction,
    RuleChange,
    ToolCall,
)
from ratchet.wire._run_data import DecisionRequest
from ratchet.workflows._pending_calls import PendingWork, SessionAudit, _decided, _mismatch

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CALL = PendingAction(id="call_1", kind="approval", call=ToolCall(id="call_1", name="pay"))
QUESTION = PendingAction(id="input_1", kind="input", question="Which city?")


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (RuleChange(), "names no tools"),
        (RuleChange(allow=[" "]), "is empty"),
        (RuleChange(allow=["pay"], deny=["pay"]), "pay appear(s) in more than one"),
        (RuleChange(allow=["a", "b"], ask=["b", "a"]), "a, b appear(s)"),
        (RuleChange(deny=["x", "x"]), "x appear(s)"),
    ],
)
def test_a_rule_change_names_each_tool_once(change: RuleChange, why: str):
    with pytest.raises(ApplicationError) as refused:
        PendingWork.validate_change(change)
    assert refused.value.type == "InvalidInputError" and why in refused.value.message


def test_a_rule_change_with_one_verdict_per_tool_passes():
    PendingWork.validate_change(RuleChange(allow=["search", "read_*"], deny=["pay"], ask=["mail"]))


def test_a_verdict_must_fit_what_waits():
    approve, answer = DecisionRequest(id="call_1"), DecisionRequest(id="input_1", answer="Oslo")
    assert _mismatch(CALL, approve, "approve") is None
    assert _mismatch(CALL, approve, "reject") is None
    assert _mismatch(QUESTION, answer, "answer") is None
    assert "approve or reject it" in (_mismatch(CALL, approve, "answer") or "")
    assert "answer it with provide_input()" in (_mismatch(QUESTION, answer, "approve") or "")
    assert "'Which city?'" in (_mismatch(QUESTION, answer, "reject") or "")
    always = DecisionRequest(id="call_1", always=True)
    assert _mismatch(CALL, always, "approve") is None
    assert "always=True goes with an approval" in (_mismatch(CALL, always, "reject") or "")
    for blank in (None, "", "  \n"):
        empty = DecisionRequest(id="input_1", answer=blank)
        assert "is empty" in (_mismatch(QUESTION, empty, "answer") or "")


def test_an_earlier_decision_is_named_with_who_took_it():
    assert _decided(Decision(id="c", approved=True, by="oncall")) == "approved by oncall"
    assert _decided(Decision(id="c", approved=False)) == "rejected"
    assert _decided(Decision(id="q", answer="Oslo", by="alice")) == "answered by alice"


def test_a_session_keeps_its_rules_and_only_its_latest_decisions():
    session = AgentSession.new("a", T0, session_id="s", thread_id="t")
    state = AgentRecord(session=session)
    audit = SessionAudit.of(lambda: state)
    audit.record([Decision(id=f"d{i}") for i in range(DECISIONS_KEPT - 1)])
    audit.record([Decision(id="last-but-one"), Decision(id="last")])
    kept = audit.recorded()
    assert len(kept) == DECISIONS_KEPT and kept[0].id == "d1" and kept[-1].id == "last"
    rules = ApprovalRules(allow=["search"])
    audit.set_rules(rules)
    assert audit.rules() == rules and state.session.approvals == rules
    assert state.session.decisions == kept  # kept in the session's data, carried with it
