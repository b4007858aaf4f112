"""Session / execution state and its two serialisations."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from ratchet.client import AgentRecord, AgentSession, AgentStatus, ExecutionRecord, StepResult
from ratchet.types import Message, ToolCall, Usage

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def busy_state() -> AgentRecord:
    session = AgentSession.new("travel", NOW, session_id="session-1", thread_id="thread-1")
    call = ToolCall(id="call_1", name="weather", arguments='{"city": "Oslo"}')
    session.thread.messages = [
        Message(role="user", content="Oslo?", id="m1"),
        Message(role="assistant", tool_calls=[call], id="m2"),
        Message(role="tool", content="snow", tool_call_id="call_1", name="weather", id="m3"),
    ]
    session.metadata = {"customer": "c-42", "tags": ["vip"]}
    session.cache = {"forecast:oslo": "snow"}
    execution = ExecutionRecord.start("exec-1", NOW).mark_step_started(NOW)
    execution = execution.with_step_result(
        StepResult(
            turn=1,
            started_at=NOW,
            completed_at=NOW + timedelta(seconds=2),
            message_ids=["m2", "m3"],
            tool_calls=['weather(city="Oslo")'],
            usage=Usage(requests=1, input_tokens=10, output_tokens=5),
        )
    ).mark_step_started(NOW + timedelta(seconds=3))
    return AgentRecord(session=session, execution=execution)


def test_full_serialisation_round_trips_exactly():
    state = busy_state()
    data = json.loads(json.dumps(state.to_full_data()))
    restored = AgentRecord.from_data(data)
    assert restored == state
    assert restored.execution is not None
    assert restored.execution.current_step_started_at == NOW + timedelta(seconds=3)
    assert restored.execution.usage.total_tokens == 15


def test_session_only_serialisation_drops_the_execution():
    state = busy_state()
    data = json.loads(json.dumps(state.to_session_data()))
    assert "execution" not in data
    restored = AgentRecord.from_data(data)
    assert restored.session == state.session
    assert restored.execution is None
    assert restored.status == AgentStatus.PENDING


def test_status_follows_the_execution():
    state = busy_state()
    assert state.status == AgentStatus.RUNNING
    assert state.execution is not None
    state.execution = state.execution.with_status(AgentStatus.COMPLETED)
    assert state.status == AgentStatus.COMPLETED
