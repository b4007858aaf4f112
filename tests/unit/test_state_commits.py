"""The state registry (ratchet/workflows/_state_commits.py): a turn's state changes
commit together or not at all. In-process, only the refusals: a commit that goes
through stamps ``workflow.now()`` on its event, so it is tested through runs
(tests/workflows/test_agent_state.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ratchet.errors import ShareTokenError
from ratchet.types import AgentRecord, AgentSession, ShareToken, StateChange, StateEntry
from ratchet.workflows._state_commits import StateRegistry

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Owner:
    """An agent of the workflow, as the registry sees one (``StateOwner``)."""

    def __init__(self, agent: str, **state: int) -> None:
        self.agent = agent
        session = AgentSession.new(agent, T0, session_id=f"session-{agent}", thread_id="t")
        entries = {k: StateEntry(data=k, version=v) for k, v in state.items()}
        self.state = AgentRecord(session=session.model_copy(update={"state": entries}))
        self.heard: list[object] = []

    def state_changed(self, event: object) -> None:
        self.heard.append(event)


def registry_of(*owners: Owner) -> StateRegistry:
    registry = StateRegistry()
    for owner in owners:
        registry.register(owner)
    return registry


def test_a_turn_whose_key_moved_on_commits_none_of_its_changes():
    writer = Owner("a", plan=2, notes=1)
    registry = registry_of(writer)
    before = writer.state.session.state
    changes = [
        StateChange(key="notes", base_version=1, data="new"),
        StateChange(key="plan", base_version=1, data="stale"),  # it is at version 2
    ]
    conflict = registry.commit(writer, 4, changes)
    assert conflict is not None
    assert (conflict.key, conflict.expected_version, conflict.actual_version) == ("plan", 1, 2)
    assert conflict.turn == 4 and conflict.rejected == ["notes", "plan"]
    assert writer.state.session.state == before and writer.heard == []
    created = registry.commit(writer, 5, [StateChange(key="plan", base_version=0)])
    assert created is not None and created.actual_version == 2  # it exists already
    assert registry.commit(writer, 6, []) is None


def test_a_shared_key_is_written_only_through_a_token_granted_for_that_write():
    owner, reader = Owner("planner", plan=1), Owner("writer")
    registry = registry_of(owner, reader)
    (read,) = registry.grant(owner, [ShareToken(id="r", owner="", agent="planner", key="plan")])
    assert read.owner == "session-planner" and "r" in owner.state.session.shares
    assert registry.resolve(read.model_copy(update={"write": True})) == (owner, read)
    for token in ("r", "unknown"):
        change = StateChange(key="plan", token=token, base_version=1, data="x")
        with pytest.raises(ShareTokenError, match="does not grant that write"):
            registry.commit(reader, 2, [change])
    registry.grant(owner, [ShareToken(id="w", owner="", agent="planner", key="other", write=True)])
    with pytest.raises(ShareTokenError):  # a write token for another key
        registry.commit(reader, 2, [StateChange(key="plan", token="w", base_version=1)])
    assert owner.state.session.state["plan"] == StateEntry(data="plan", version=1)
    assert registry.grant(owner, []) == []
