"""The pure helpers of a session's wire data (ratchet/wire/_session_data.py): request
ids, the digest that tells a retried send from another, and the log index's keys."""

from __future__ import annotations

import time
import uuid

from ratchet.types import Message
from ratchet.wire._session_data import (
    KEY_CHARS,
    MAX_REQUEST_ID,
    batch_key,
    ids_digest,
    new_request_id,
    request_id_problem,
    request_made_ms,
    send_digest,
)


def test_a_request_id_is_one_to_max_request_id_characters():
    assert request_id_problem("x") is None
    assert request_id_problem("x" * MAX_REQUEST_ID) is None
    empty = request_id_problem("")
    assert empty is not None and empty.startswith("request_id is empty")
    long = request_id_problem("x" * (MAX_REQUEST_ID + 1), name="--request-id")
    assert long is not None and long.startswith("--request-id is 201 characters long")
    assert f"1 to {MAX_REQUEST_ID} characters" in long


def test_a_new_request_id_is_a_uuid7_that_says_when_it_was_made():
    before = time.time_ns() // 1_000_000
    made = new_request_id()
    after = time.time_ns() // 1_000_000
    assert uuid.UUID(made).version == 7 and uuid.UUID(made).variant == uuid.RFC_4122
    assert before <= (request_made_ms(made) or 0) <= after
    assert len({new_request_id() for _ in range(100)}) == 100
    assert request_made_ms(made.upper()) == request_made_ms(made)


def test_only_a_uuid7_tells_when_it_was_made():
    assert request_made_ms(str(uuid.uuid4())) is None
    assert request_made_ms("order-17") is None
    assert request_made_ms(new_request_id() + "x") is None
    assert request_made_ms("0189a4f2-3b1c-7def-8abc-0123456789ab") == 0x0189A4F23B1C


def test_a_sends_digest_ignores_its_message_ids_and_nothing_else():
    one = [Message(role="user", content="pay 10", id="msg_a")]
    assert send_digest(one) == send_digest([Message(role="user", content="pay 10", id="msg_b")])
    assert send_digest(one) != send_digest([Message(role="user", content="pay 1000")])
    assert send_digest(one) != send_digest([*one, Message.user("and more")])
    assert send_digest(one) != send_digest([Message(role="system", content="pay 10")])


def test_an_index_keys_a_batch_by_its_last_id_and_digests_ids_in_order():
    assert len(batch_key("msg_1")) == KEY_CHARS and batch_key("msg_1") != batch_key("msg_2")
    a, b = Message.user("a"), Message.user("b")
    a.id, b.id = "1", "2"
    assert ids_digest([a, b]) != ids_digest([b, a])
    assert ids_digest([a, b]) == ids_digest([a.model_copy(update={"content": "other"}), b])
