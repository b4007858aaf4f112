"""LogIndexer (ratchet/workflows/_log_index.py): where a run's part of a session's
log is in its own history. (The basic shape: tests/workflows/test_thread_reads.py.)"""

from __future__ import annotations

from ratchet.types import Message, ThreadData, approximate_size
from ratchet.wire._session_data import KEY_CHARS, LogInfo, batch_key
from ratchet.workflows._log_index import INLINE_MAX_BYTES, LogIndexer


def msg(id: str, text: str = "x") -> Message:
    return Message(role="user", content=text, id=id)


def index_of(indexer: LogIndexer, *messages: Message):
    thread = ThreadData(id="t", messages=list(messages))
    return indexer.index(thread, LogInfo(thread_id="t", length=len(messages)))


def test_batches_side_by_side_share_one_string_and_a_whole_message_ends_it():
    a, b, c, d = msg("a"), msg("b"), msg("c"), msg("d")
    indexer = LogIndexer(start=0)
    for batch in ([a], [b], [d]):
        indexer.held(batch)
    indexer.appended([a, b, c, d])
    index = index_of(indexer, a, b, c, d)
    assert index is not None
    assert index.entries == [batch_key("a") + batch_key("b"), c, batch_key("d")]
    assert indexer.bytes == 3 * KEY_CHARS + approximate_size(c)


def test_a_batch_appended_in_pieces_or_out_of_order_is_kept_whole():
    a, b = msg("a"), msg("b")
    indexer = LogIndexer(start=3)
    indexer.held([a, b])
    indexer.appended([a])  # its first message alone is not the batch
    indexer.appended([b])
    indexer.appended([b, a])
    index = index_of(indexer, a, b, b, a)
    assert index is not None and index.entries == [a, b, b, a] and index.start == 3


def test_a_batch_with_a_message_without_an_id_is_not_held():
    a, nameless = msg("a"), msg("")
    indexer = LogIndexer(start=0)
    indexer.held([a, nameless])
    indexer.held([])
    indexer.appended([a, nameless])
    index = index_of(indexer, a, nameless)
    assert index is not None and index.entries == [a, nameless]


def test_once_a_message_too_big_to_index_is_appended_the_index_is_given_up_for_good():
    small, big = msg("s"), msg("big", "x" * INLINE_MAX_BYTES)
    indexer = LogIndexer(start=0)
    indexer.held([big])  # a batch in history is indexed by key, however big
    indexer.appended([big])
    assert index_of(indexer, big) is not None
    indexer.appended([msg("big2", "x" * INLINE_MAX_BYTES), small])
    indexer.held([small])
    indexer.appended([small])
    assert index_of(indexer, big) is None
