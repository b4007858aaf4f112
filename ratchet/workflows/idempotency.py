"""A session's request ids: a retried send answers the message it first sent.

Temporal remembers an Update's id only in the workflow run that took it, and a
session continues as new every few hundred messages, so the session keeps its own
book of request ids and carries it over: the ids of the last ``MAX_AGE`` and at
most ``KEPT`` of them. Each entry keeps a hash of the id, a hash of what the send
carried (the same id with other messages is refused, never answered with the
first one's reply) and the ticket of the message it brought.

An id the book has forgotten cannot be told from a new one, unless it says when it
was made: a UUIDv7 (what ``new_request_id`` makes) older than ``MAX_AGE``, or
older than an id forgotten to keep within ``KEPT``, is refused as expired, so a
late retry never runs its message twice. Other ids are remembered as long, and
past that are taken as new.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import NamedTuple

from temporalio.exceptions import ApplicationError

from ratchet.wire.sessions import RecentRequests, request_made_ms

KEPT = 500
"""Request ids a session remembers at most."""
MAX_AGE = timedelta(hours=24)
"""How long a session remembers a request id."""
_MAX_AGE_MS = int(MAX_AGE.total_seconds() * 1000)


class Entry(NamedTuple):
    digest: str
    ticket: int
    made_ms: int
    """When the id was made (a UUIDv7's own time), else when the session took it."""


class RequestIds:
    """Request id -> the ticket of the send that brought it (workflow state)."""

    def __init__(self, carried: RecentRequests) -> None:
        self._entries: dict[str, Entry] = {}
        for line in carried.entries:
            key, digest, ticket, made = line.split(" ")
            self._entries[key] = Entry(digest, int(ticket, 36), int(made, 36))
        self._horizon_ms = carried.horizon_ms

    def find(self, session: str, request_id: str, digest: str, now_ms: int) -> int | None:
        """The ticket of the message ``request_id`` brought; ``None`` for a new id.
        Raises (the send's validator refuses it) for the id with another body, or an
        id made before what the session still remembers."""
        entry = self._entries.get(_key(request_id))
        if entry is not None and entry.made_ms >= now_ms - _MAX_AGE_MS:
            if entry.digest != digest:
                raise ApplicationError(
                    f"Session {session} took request id {request_id!r} already, with other "
                    "messages; a request id names one message. Send this one with a new "
                    "request id (or without one).",
                    type="ConversationConflictError",
                    non_retryable=True,
                )
            return entry.ticket
        made = request_made_ms(request_id)
        if made is not None and (made <= self._horizon_ms or made < now_ms - _MAX_AGE_MS):
            raise ApplicationError(
                f"Request id {request_id!r} was made before what session {session} still "
                f"remembers (ids of the last {MAX_AGE.total_seconds() / 3600:g} hours, at most "
                f"{KEPT}); it may have been sent already, so it is not sent again. Read the "
                "thread to see whether it was, and send a new message with a new request id.",
                type="RequestExpiredError",
                non_retryable=True,
            )
        return None

    def known(self, request_id: str, digest: str) -> int | None:
        """``find`` without its checks (the Update handler, after its validator)."""
        entry = self._entries.get(_key(request_id))
        return entry.ticket if entry is not None and entry.digest == digest else None

    def add(self, request_id: str, digest: str, ticket: int, now_ms: int) -> None:
        made = request_made_ms(request_id) or now_ms
        self._entries[_key(request_id)] = Entry(digest, ticket, made)
        oldest = now_ms - _MAX_AGE_MS
        for key in [k for k, e in self._entries.items() if e.made_ms < oldest]:
            del self._entries[key]
        while len(self._entries) > KEPT:
            key = next(iter(self._entries))
            self._horizon_ms = max(self._horizon_ms, self._entries.pop(key).made_ms)

    def carried(self) -> RecentRequests:
        return RecentRequests(
            entries=[
                f"{k} {e.digest} {_base36(e.ticket)} {_base36(e.made_ms)}"
                for k, e in self._entries.items()
            ],
            horizon_ms=self._horizon_ms,
        )


def _base36(n: int) -> str:
    digits = ""
    while True:
        n, d = divmod(n, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[d] + digits
        if not n:
            return digits


def _key(request_id: str) -> str:
    return hashlib.sha256(request_id.encode()).hexdigest()[:12]
