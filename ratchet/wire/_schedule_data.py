"""What a schedule's firing carries to a session (``AgentClient.schedule(session=...)``)."""

from __future__ import annotations

from pydantic import BaseModel

SCHEDULE_PAUSED_NOTE = "Ratchet: session {session} is closed; delete this schedule"


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
