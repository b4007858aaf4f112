"""RequestIds (ratchet/workflows/_idempotency.py): the book of request ids a session
carries across continue-as-new, and the horizon of the UUIDv7 ids it forgot. Through
a session: tests/workflows/test_idempotent_sends.py."""

from __future__ import annotations

import time
import uuid

import pytest
from temporalio.exceptions import ApplicationError

from ratchet.wire._session_data import RecentRequests, new_request_id, request_made_ms
from ratchet.workflows import _idempotency as idempotency
from ratchet.workflows._idempotency import KEPT, MAX_AGE, RequestIds

NOW = int(time.time() * 1000)
DAY = int(MAX_AGE.total_seconds() * 1000)
AHEAD = "ffffffff-ffff-7fff-bfff-ffffffffffff"
"""A UUIDv7 request id dated about 8,900 years ahead."""


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
        ticket = book.find("s", request_id, "d", taken)  # the validator
        if ticket is None:  # the handler
            assert book.known(request_id, "d", taken) is None
            ticket, tickets = tickets, tickets + 1
            book.add(request_id, "d", ticket, taken)
        carried = book.carried()
        return ticket

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


# Moved from tests/workflows/test_idempotent_sends.py, which keeps the end-to-end tests.


def test_a_session_remembers_its_latest_ids_and_refuses_uuid7_ids_it_forgot():
    now = int(time.time() * 1000)
    book = RequestIds(RecentRequests())
    ids = [uuid7_made(now - 1000 + i) for i in range(KEPT + 1)]
    for ticket, request_id in enumerate(ids):
        book.add(request_id, "d", ticket, now)
    carried = RequestIds(book.carried())  # across a continue-as-new
    assert carried.find("s", ids[-1], "d", now) == KEPT
    assert carried.find("s", ids[1], "d", now) == 1
    with pytest.raises(Exception, match="RequestExpired|made before"):
        carried.find("s", ids[0], "d", now)  # forgotten to keep within KEPT
    assert carried.find("s", uuid7_made(now), "d", now) is None  # a new one
    assert carried.find("s", "order-1", "d", now) is None  # not a UUIDv7: new
    later = now + 25 * 3600 * 1000
    with pytest.raises(Exception, match="made before"):
        carried.find("s", ids[-1], "d", later)  # past the age bound
    assert request_made_ms(new_request_id()) is not None
    assert len(book.carried().model_dump_json()) < 20 * 1024  # small enough to carry


def test_an_id_dated_ahead_counts_only_up_to_when_the_session_took_it():
    now = int(time.time() * 1000)
    book = RequestIds(RecentRequests())
    book.add(AHEAD, "d", 0, now)
    honest = [uuid7_made(now + i) for i in range(1, KEPT + 1)]
    for ticket, request_id in enumerate(honest, start=1):
        book.add(request_id, "d", ticket, now + ticket)  # AHEAD is forgotten
    assert book.find("s", uuid7_made(now + KEPT + 1), "d", now + KEPT + 1) is None
    book.add(uuid7_made(now + KEPT + 1), "d", KEPT + 1, now + KEPT + 1)  # honest[0] forgotten
    with pytest.raises(Exception, match="made before"):
        book.find("s", honest[0], "d", now + KEPT + 1)
    assert book.carried().horizon_ms == now + 1  # what is carried holds no time ahead


def test_a_horizon_carried_from_0_1_0_ahead_of_the_ids_remembered_is_pulled_back():
    """A session wedged by 0.1.0 takes fresh ids again at its next send, without a
    continue-as-new (it refused every send, so it would not have made one)."""
    now = int(time.time() * 1000)
    book = RequestIds(RecentRequests())
    book.add(uuid7_made(now - 5000), "d", 7, now - 4000)
    wedged = book.carried().model_copy(update={"horizon_ms": int(AHEAD[:8] + AHEAD[9:13], 16)})
    assert RequestIds(wedged).find("s", new_request_id(), "d", now) is None
    assert RequestIds(wedged).find("s", uuid7_made(now - 3999), "d", now) is None
    with pytest.raises(Exception, match="made before"):  # made before the oldest id it
        RequestIds(wedged).find("s", uuid7_made(now - 4000), "d", now)  # remembers was taken
    alone = RecentRequests(horizon_ms=wedged.horizon_ms)  # and with no id remembered
    assert RequestIds(alone).find("s", new_request_id(), "d", now) is None


def test_the_send_handler_forgets_as_its_validator_did():
    """A replay runs no validator of an accepted Update: had only ``find`` forgotten
    an id past ``MAX_AGE``, a replay would answer its retry with the old ticket where
    the first execution ran it again (another command: a replay that fails)."""
    now = int(time.time() * 1000)
    book = RequestIds(RecentRequests())
    book.add("order-1", "d", 3, now)
    assert book.known("order-1", "d", now + 1) == 3
    assert book.known("order-1", "d", now + 25 * 3600 * 1000) is None
