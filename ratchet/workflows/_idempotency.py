"""A session's request ids: a retried send answers the message it first sent.

Temporal remembers an Update's id only in the workflow run that took it, and a
session continues as new every few hundred messages, so the session keeps its own
book of request ids and carries it over: the ids of the last ``MAX_AGE``, at most
``KEPT`` of them. Each entry keeps a hash of the id, a hash of what the send
carried (the same id with other messages is refused, never answered with the
first one's reply) and the ticket of the message it brought.

An id the book has forgotten cannot be told from a new one, unless it says when it
was made: a UUIDv7 (what ``new_request_id`` makes) made no later than the newest
UUIDv7 the book forgot is refused as expired, so a late retry never runs its
message twice. An id's time counts only up to when the session took it: a time
ahead of that (a client's clock running ahead, an id made up) would refuse every
other client's fresh ids until it came. Ids of other shapes are remembered as long,
and past that are taken as new.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import NamedTuple

from temporalio.exceptions import ApplicationError

from ratchet.wire import RecentRequests, request_made_ms

KEPT = 500
"""Request ids a session remembers at most."""
MAX_AGE = timedelta(hours=24)
"""How long a session remembers a request id."""
_MAX_AGE_MS = int(MAX_AGE.total_seconds() * 1000)
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


class Entry(NamedTuple):
    digest: str
    ticket: int
    taken_ms: int
    """When the session took the send (workflow time)."""
    made_ms: int | None
    """When a UUIDv7 id was made (its client's time); ``None`` for other ids."""


class RequestIds:
    """Request id -> the ticket of the send that brought it (workflow state)."""

    def __init__(self, carried: RecentRequests) -> None:
        self._entries: dict[str, Entry] = {}
        for line in carried.entries:
            key, digest, ticket, taken, *made = line.split(" ")
            self._entries[key] = Entry(
                digest, int(ticket, 36), int(taken, 36), int(made[0], 36) if made else None
            )
        self._horizon_ms = carried.horizon_ms

    def find(self, session: str, request_id: str, digest: str, now_ms: int) -> int | None:
        """The ticket of the message ``request_id`` brought; ``None`` for a new id.
        Raises (the send's validator refuses it) for the id with another body, or a
        UUIDv7 id made before what the session still remembers."""
        self._forget(now_ms)
        entry = self._entries.get(_key(request_id))
        if entry is not None:
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
        if made is not None and made <= self._horizon_ms:
            raise ApplicationError(
                f"Request id {request_id!r} was made before what session {session} still "
                f"remembers (ids of the last {MAX_AGE.total_seconds() / 3600:g} hours, at most "
                f"{KEPT}); it may have been sent already, so it is not sent again. Read the "
                "thread to see whether it was, and send a new message with a new request id "
                "(if this one was made just now, the clock of the machine that made it runs "
                "behind the session's).",
                type="RequestExpiredError",
                non_retryable=True,
            )
        return None

    def known(self, request_id: str, digest: str, now_ms: int) -> int | None:
        """``find`` without its checks (the Update handler, after its validator). It
        forgets as ``find`` did: a replay runs no validator of an accepted Update."""
        self._forget(now_ms)
        entry = self._entries.get(_key(request_id))
        return entry.ticket if entry is not None and entry.digest == digest else None

    def add(self, request_id: str, digest: str, ticket: int, now_ms: int) -> None:
        entry = Entry(digest, ticket, now_ms, request_made_ms(request_id))
        self._entries[_key(request_id)] = entry
        self._forget(now_ms)

    def _forget(self, now_ms: int) -> None:
        """Drop ids past ``MAX_AGE`` and beyond ``KEPT``, oldest first."""
        while self._entries:
            key, entry = next(iter(self._entries.items()))
            if len(self._entries) <= KEPT and entry.taken_ms >= now_ms - _MAX_AGE_MS:
                break
            del self._entries[key]
            if entry.made_ms is not None:
                made = min(entry.made_ms, entry.taken_ms)
                self._horizon_ms = max(self._horizon_ms, made)
        # No forgotten id was taken after the oldest one remembered (none left: all
        # were taken before MAX_AGE ago), so a horizon past that came from an id dated
        # ahead, which 0.1.0 took at its word: it refused every send until then.
        oldest = next(iter(self._entries.values()), None)
        bound = oldest.taken_ms if oldest is not None else now_ms - _MAX_AGE_MS
        self._horizon_ms = min(self._horizon_ms, bound)

    def carried(self) -> RecentRequests:
        return RecentRequests(
            entries=[
                " ".join(
                    [key, e.digest, _base36(e.ticket), _base36(e.taken_ms)]
                    + ([_base36(e.made_ms)] if e.made_ms is not None else [])
                )
                for key, e in self._entries.items()
            ],
            horizon_ms=self._horizon_ms,
        )


def _base36(n: int) -> str:
    digits = ""
    while True:
        n, d = divmod(n, 36)
        digits = _DIGITS[d] + digits
        if not n:
            return digits


def _key(request_id: str) -> str:
    return hashlib.sha256(request_id.encode()).hexdigest()[:12]
