"""The temporalio internals Ratchet reads (ratchet/_temporal_internals.py), each
checked against the pinned SDK: an upgrade that renames one fails here, by name."""

from __future__ import annotations

from temporalio.api.common.v1 import Payload
from temporalio.client import WorkflowHandle, WorkflowUpdateHandle
from temporalio.contrib.workflow_streams import WorkflowStream, WorkflowStreamItem
from temporalio.contrib.workflow_streams._types import _encode_payload

from ratchet._temporal_internals import (
    PUBLISH_SIGNAL,
    decode_stream_payload,
    handle_client,
    stream_end,
    stream_item,
    stream_items_since,
    update_settled,
    wire_stream_item,
)


def test_a_handle_gives_back_the_client_it_was_made_by():
    client = object()
    handle = WorkflowHandle(client, "wf")  # type: ignore[arg-type]
    assert handle_client(handle) is client


def test_a_streams_end_and_its_items_since_an_offset_read_its_log():
    # WorkflowStream.__init__ runs only inside a workflow; check it sets the two
    # attributes read here, then read them on a stream that holds offsets 5 and 6.
    assert {"_log", "_base_offset"} <= set(WorkflowStream.__init__.__code__.co_names)
    stream = object.__new__(WorkflowStream)
    first, second = (WorkflowStreamItem(topic="t", data=Payload(data=b)) for b in (b"a", b"b"))
    stream._log, stream._base_offset = [first, second], 5  # type: ignore[attr-defined]
    assert stream_end(stream) == 7
    assert stream_items_since(stream, 6) == [second]
    assert stream_items_since(stream, 0) == [first, second]  # truncated before 5


def test_a_polled_items_data_decodes_to_the_payload_the_stream_wrote():
    payload = Payload(metadata={"encoding": b"json/plain"}, data=b'{"kind":"text"}')
    assert decode_stream_payload(_encode_payload(payload)) == payload


def test_an_update_handle_says_whether_its_outcome_came_back_already():
    handle = WorkflowUpdateHandle(object(), "u", "wf")  # type: ignore[arg-type]
    assert "_known_outcome" in WorkflowUpdateHandle.__init__.__code__.co_names
    assert not update_settled(handle)
    handle._known_outcome = object()  # type: ignore[attr-defined, assignment]
    assert update_settled(handle)


def test_the_publish_signal_and_a_rebuilt_stream_item_match_what_the_stream_uses():
    from temporalio.contrib.workflow_streams import _stream

    assert PUBLISH_SIGNAL == _stream._PUBLISH_SIGNAL  # type: ignore[attr-defined]
    payload = Payload(metadata={"encoding": b"json/plain"}, data=b'{"kind":"text"}')
    item = stream_item("events", payload, 3)
    assert (item.topic, item.offset) == ("events", 3)
    assert decode_stream_payload(item.data) == payload
    assert wire_stream_item("events", item.data, 4).data == item.data
