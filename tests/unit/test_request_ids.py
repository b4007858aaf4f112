"""RequestIds (ratchet/workflows/_idempotency.py): the book of request ids a session
carries across continue-as-new. Its bounds and the horizon of forgotten UUIDv7 ids
are also tested in tests/workflows/test_idempotent_sends.py; these are the rest."""

from __future__ import annotations

import time
import uuid

import pytest
from temporalio.exceptions import ApplicationError

from ratchet.wire._session_data import RecentRequests
from ratchet.workflows import _idempotency as idempotency
from ratchet.workflows._idempotency import KEPT, MAX_AGE, RequestIds

NOW = int(time.time() * 1000)
DAY = int(MAX_AGE.total_seconds() * 1000)


def uuid7_made(ms: int) -> str:
    value = (ms << 80) | (0x7 << 76) | (0b10 << 62) | uuid.uuid4().int & (2**62 - 1)
    return str(uuid.UUID(int=value))


def test_an_id_answers_its_ticket_and_the_same_id_with_other_messages_is_a_conflict():
    book = RequestIds(RecentRequests())
    book.add("order-1", "digest-a", 4, NOW)
    assert book.find("s-1", "order-1", "digest-a", NOW) == 4
    assert book.known("order-1", "digest-a", NOW) == 4
    with pytest.raises(ApplicationError) as conflict:
        book.find("s-1", "order-1", "digest-b", NOW)
    assert conflict.value.type == "ConversationConflictError" and conflict.value.non_retryable
    assert "'order-1'" in conflict.value.message and "s-1" in conflict.value.message
    assert book.known("order-1", "digest-b", NOW) is None  # the handler's check: a new send
    assert book.find("s-1", "order-2", "digest-a", NOW) is None


def test_a_carried_book_answers_as_the_one_it_came_from():
    book = RequestIds(RecentRequests())
    made = uuid7_made(NOW - 10)
    book.add("order-1", "a", 0, NOW)
    book.add(made, "b", 36**3 + 5, NOW + 1)  # tickets are written in base 36
    carried = book.carried()
    assert len(carried.entries) == 2 and carried.entries[0].split(" ")[2] == "0"
    assert len(carried.entries[0].split(" ")) == 4  # no time made: not a UUIDv7
    assert len(carried.entries[1].split(" ")) == 5
    again = RequestIds(RecentRequests.model_validate_json(carried.model_dump_json()))
    assert again.find("s", "order-1", "a", NOW + 2) == 0
    assert again.find("s", made, "b", NOW + 2) == 36**3 + 5
    assert again.carried() == carried


def test_an_id_is_kept_for_max_age_after_it_was_taken_and_no_longer():
    book = RequestIds(RecentRequests())
    book.add("order-1", "d", 1, NOW)
    assert book.find("s", "order-1", "d", NOW + DAY) == 1  # exactly MAX_AGE: kept
    assert book.find("s", "order-1", "d", NOW + DAY + 1) is None  # forgotten: a new id
    assert book.carried().entries == [] and book.carried().horizon_ms == 0


def test_a_forgotten_id_of_another_shape_is_taken_as_new_but_a_uuid7_is_refused():
    book = RequestIds(RecentRequests())
    made = uuid7_made(NOW - 1000)
    book.add("order-1", "d", 0, NOW)
    book.add(made, "d", 1, NOW)
    later = NOW + DAY + 1
    assert book.find("s", "order-1", "d", later) is None
    with pytest.raises(ApplicationError) as expired:
        book.find("s", made, "d", later)
    assert expired.value.type == "RequestExpiredError" and expired.value.non_retryable
    assert "24 hours" in expired.value.message and str(KEPT) in expired.value.message
    assert book.carried().horizon_ms == NOW - 1000  # when the forgotten id was made


def test_past_kept_the_oldest_taken_goes_first():
    book = RequestIds(RecentRequests())
    for ticket in range(KEPT + 2):
        book.add(f"order-{ticket}", "d", ticket, NOW + ticket)
    assert book.known("order-0", "d", NOW + KEPT + 2) is None
    assert book.known("order-1", "d", NOW + KEPT + 2) is None
    assert book.known("order-2", "d", NOW + KEPT + 2) == 2
    assert len(book.carried().entries) == KEPT


def test_a_carried_book_still_refuses_an_id_sent_again_with_other_messages():
    book = RequestIds(RecentRequests())
    book.add("order-18", "pay-10", 0, NOW)
    carried = RequestIds(book.carried())  # the session continued as new since
    with pytest.raises(ApplicationError, match="'order-18'.*new request id"):
        carried.find("s", "order-18", "pay-1000", NOW + 1)
    assert carried.find("s", "order-18", "pay-10", NOW + 1) == 0


AHEAD = "ffffffff-ffff-7fff-bfff-ffffffffffff"
"""A UUIDv7 request id dated about 8,900 years ahead."""


def test_an_id_dated_ahead_refuses_no_later_send_once_a_session_continuing_as_new_forgot_it(
    monkeypatch: pytest.MonkeyPatch,
):
    """0.1.0 took a forgotten UUIDv7 id's time as its horizon: one id dated ahead
    refused every later default send, for good. A session that continues as new after
    each message, remembering 2 ids (the same rule as 500, fewer sends): each send
    comes to a book carried over, checked by the Update's validator (``find``), then
    taken by its handler (``known``, ``add``)."""
    monkeypatch.setattr(idempotency, "KEPT", 2)
    carried, clock, tickets = RecentRequests(), NOW, 0

    def send(request_id: str | None = None) -> int:
        nonlocal carried, clock, tickets
        clock += 1000
        request_id = request_id or uuid7_made(clock)  # the client's default id
        book = RequestIds(carried)
        taken = clock + 5  # the session takes it a moment after it was made
        found = book.find("s", request_id, "d", taken)
        if found is None and book.known(request_id, "d", taken) is None:
            found, tickets = tickets, tickets + 1
            book.add(request_id, "d", found, taken)
        carried = book.carried()
        return found

    send(AHEAD)
    send()
    send()  # the session forgets AHEAD here
    assert send() == 3  # a later default send is taken
    honest = uuid7_made(clock + 1000)
    assert send(honest) == 4
    assert send(honest) == 4  # a retry while remembered answers its message
    send()
    send()  # forgets `honest`, which was made before it was taken
    with pytest.raises(ApplicationError) as expired:
        send(honest)  # a late retry still runs nothing
    assert expired.value.type == "RequestExpiredError"
    assert carried.horizon_ms < clock  # what is carried holds no time ahead
