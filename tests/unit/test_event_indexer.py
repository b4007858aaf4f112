"""EventIndexer (ratchet/workflows/_event_index.py): where a run's events are in
its own history. (Its basic shape and bound: tests/workflows/test_closed_run_reads.py.)"""

from __future__ import annotations

from ratchet.wire._run_record import EVENT_BYTES_KEPT, EventIndex
from ratchet.workflows._event_index import EventIndexer


def test_a_run_that_published_nothing_itself_counts_every_event_as_signalled():
    assert EventIndexer(start=4).index(end=9) == EventIndex(start=4, end=9, entries=[5])
    assert EventIndexer(start=4).index(end=4) == EventIndex(start=4, end=4, entries=[])


def test_events_published_back_to_back_need_no_count_between_them():
    indexer = EventIndexer(start=0)
    indexer.published(0, b"a")
    indexer.published(1, b"b")
    indexer.published(4, b"c")  # 2 and 3 came by signal
    assert indexer.index(end=5).entries == ["a", "b", 2, "c"]


def test_an_events_text_that_is_a_messages_is_kept_by_the_messages_id():
    indexer = EventIndexer(start=0)
    indexer.published(0, b'{"kind":"final","text":"long"}', ("msg_1", b'{"kind":"final"}', 300))
    assert indexer.index(end=1).entries == [["msg_1", '{"kind":"final"}', 300]]


def test_past_its_bound_a_text_by_reference_counts_by_its_own_size():
    indexer = EventIndexer(start=0)
    without = b"x" * 1000
    count = EVENT_BYTES_KEPT // 1000 + 10
    for offset in range(count):
        indexer.published(offset, b"ignored", ("m", without, 0))
    index = indexer.index(end=count)
    assert index.end == count and index.skip == 0  # nothing came by signal
    assert index.start == count - len(index.entries) and 0 < index.start < 20
