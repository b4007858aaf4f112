"""A schedule's note fits Temporal's limit of 1000 bytes (it refuses a longer one)."""

from __future__ import annotations

from ratchet.wire import paused_note, schedule_note


def test_a_note_too_long_is_cut_at_a_character_with_an_ellipsis():
    assert schedule_note("short") == "short"
    note = schedule_note("é" * 600)  # 1200 bytes; é is two
    assert len(note.encode()) <= 1000
    assert note == "é" * 498 + "…"


def test_the_paused_note_of_a_long_session_id_keeps_what_to_do():
    note = paused_note("s" * 2000)
    assert len(note.encode()) == 1000
    assert note.startswith("Ratchet: session sss")
    assert note.endswith("s… is closed; delete this schedule")
    assert paused_note("ops-1") == "Ratchet: session ops-1 is closed; delete this schedule"
