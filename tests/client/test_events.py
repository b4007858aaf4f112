"""Typed events: each kind decodes to its class, including events written before
the classes existed (the wire shape did not change)."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from pydantic_core import to_json
from temporalio.api.common.v1 import Payload

from ratchet.client import (
    CustomEvent,
    RunEvent,
    RunFinished,
    RunStarted,
    StateChangedEvent,
    StatusChanged,
    StatusData,
    TextDelta,
    ToolCalled,
    ToolResult,
    TurnCompleted,
)
from ratchet.payloads import data_converter
from ratchet.types import AgentStatus, type_adapter

# As the 0.1.0 workflows published them, before events were typed.
RECORDED = [
    {"kind": "run_started", "run_id": "r", "agent": "chat", "text": "chat"},
    {"kind": "run_started", "text": "chat", "data": {"in_session": True}},
    {"kind": "status", "text": "AWAITING_APPROVAL", "data": {"waiting": ["pay(500)"]}},
    {"kind": "turn_started", "turn": 2},
    {
        "kind": "turn_completed",
        "turn": 1,
        "data": {"tool_calls": ['weather(city="Oslo")'], "tokens": 42, "final": False},
    },
    {"kind": "tool_call", "turn": 1, "text": "weather()", "data": {"id": "call_1"}},
    {"kind": "tool_result", "text": "sunny", "data": {"id": "call_1", "is_error": True}},
    {"kind": "state_changed", "text": "plan", "data": {"keys": {"plan": 2}, "by": "planner"}},
    {"kind": "run_finished", "text": "Paid.", "data": {"status": "COMPLETED"}},
    {"kind": "retry", "turn": 1, "attempt": 2, "seq": 1, "text": "an earlier attempt failed"},
    {"kind": "text_delta", "attempt": 1, "seq": 3, "text": "Hel"},
    {"kind": "custom", "attempt": 1, "seq": 1, "data": {"step": "thinking", "n": [1, 2]}},
]


def decode(event: dict) -> RunEvent:
    payload = Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(event).encode())
    return data_converter.payload_converter.from_payload(payload, RunEvent)  # pyright: ignore[reportArgumentType]


def test_recorded_events_decode_to_their_typed_classes():
    events = [decode(e) for e in RECORDED]
    assert [type(e).__name__ for e in events] == [
        "RunStarted",
        "RunStarted",
        "StatusChanged",
        "TurnStarted",
        "TurnCompleted",
        "ToolCalled",
        "ToolResult",
        "StateChangedEvent",
        "RunFinished",
        "Retry",
        "TextDelta",
        "CustomEvent",
    ]
    started, in_session, status, _, completed, call, result, changed, finished, *_ = events
    assert isinstance(started, RunStarted) and started.data is None
    assert isinstance(in_session, RunStarted) and in_session.data and in_session.data.in_session
    assert isinstance(status, StatusChanged)
    assert status.status is AgentStatus.AWAITING_APPROVAL and status.waiting == ["pay(500)"]
    assert isinstance(completed, TurnCompleted) and completed.data.tokens == 42
    assert isinstance(call, ToolCalled) and call.data and call.data.id == "call_1"
    assert isinstance(result, ToolResult) and result.data.is_error
    assert isinstance(changed, StateChangedEvent) and changed.data.keys == {"plan": 2}
    assert isinstance(finished, RunFinished) and finished.status is AgentStatus.COMPLETED
    assert isinstance(events[-1], CustomEvent) and events[-1].data["n"] == [1, 2]


def test_typed_events_keep_the_wire_shape():
    """What the workflows publish now is what they published before, less the
    fields that hold their default (``"final": false``), and decodes the same."""
    for recorded in RECORDED:
        event = decode(recorded)
        written = json.loads(to_json(event))
        assert decode(written) == event
        data = written.pop("data", None)
        assert written.items() <= recorded.items(), recorded
        if isinstance(data, dict):
            assert data.items() <= recorded["data"].items(), recorded


def test_an_event_of_an_unknown_kind_is_refused_with_the_known_ones():
    with pytest.raises(ValidationError, match="run_started"):
        type_adapter(RunEvent).validate_python({"kind": "progress"})


def test_a_watcher_can_match_on_the_classes():
    def describe(event: RunEvent) -> str:
        match event:
            case TextDelta(text=text):
                return f"text {text}"
            case StatusChanged(data=StatusData(waiting=[first, *_])):
                return f"waits for {first}"
            case _:
                return event.kind

    assert describe(decode(RECORDED[-2])) == "text Hel"
    assert describe(decode(RECORDED[2])) == "waits for pay(500)"
    assert describe(decode(RECORDED[3])) == "turn_started"
