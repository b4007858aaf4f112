"""What a schedule's firing carries to a session (``AgentClient.schedule(session=...)``)."""

from __future__ import annotations

from pydantic import BaseModel

SCHEDULE_PAUSED_NOTE = "Ratchet: session {session} is closed; delete this schedule"
MAX_NOTE_BYTES = 1000
"""Temporal's limit on a schedule's note: it refuses a longer one (a pause too)."""
CUT = "…"


def schedule_note(text: str, limit: int = MAX_NOTE_BYTES) -> str:
    """``text``, cut to ``limit`` bytes of UTF-8 (never inside a character) with an
    ellipsis where it was cut, so Temporal takes it as a schedule's note."""
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[: limit - len(CUT.encode())].decode(errors="ignore") + CUT


def paused_note(session_id: str) -> str:
    """``SCHEDULE_PAUSED_NOTE`` for ``session_id``: a session id too long for the note
    is cut, so what to do still shows."""
    room = MAX_NOTE_BYTES - len(SCHEDULE_PAUSED_NOTE.format(session="").encode())
    return SCHEDULE_PAUSED_NOTE.format(session=schedule_note(session_id, room))


class ScheduledMessage(BaseModel):
    """The input of a ``ScheduledSend`` firing: the text to send and to which session."""

    session_id: str
    prompt: str


class Delivery(BaseModel):
    """One firing's send, keyed by the firing: ``request_id`` is the same on every
    retry, so the session runs the message once however often it is delivered."""

    session_id: str
    prompt: str
    request_id: str
    schedule_id: str | None = None
    """The schedule that fired (``TemporalScheduledById``): paused if the session closed."""
