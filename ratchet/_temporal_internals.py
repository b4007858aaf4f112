"""The temporalio internals Ratchet reads, all in one place.

temporalio is pinned (``==1.35.0`` in pyproject.toml). An SDK upgrade that renames one
of these breaks here, and ``tests/client/test_temporal_internals.py`` says which.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from temporalio.api.common.v1 import Payload
    from temporalio.client import Client, WorkflowHandle, WorkflowUpdateHandle
    from temporalio.contrib.workflow_streams import WorkflowStream, WorkflowStreamItem


def handle_client(handle: WorkflowHandle[Any, Any]) -> Client:
    """The client a workflow handle was made by (its data converter, its other runs)."""
    return handle._client  # noqa: SLF001


def stream_end(stream: WorkflowStream) -> int:
    """The offset a workflow stream gives its next event (what its offset query answers)."""
    return stream._on_offset()  # noqa: SLF001


def stream_items_since(stream: WorkflowStream, offset: int) -> list[WorkflowStreamItem[Payload]]:
    """The items a workflow stream still holds from global offset ``offset`` on, without
    the copy of the whole log ``get_state()`` makes."""
    return stream._log[max(0, offset - stream._base_offset) :]  # noqa: SLF001


def decode_stream_payload(wire: str) -> Payload:
    """A polled workflow stream item's ``data``: its payload, as the stream writes it
    on the wire (base64 of the serialized ``Payload``)."""
    from temporalio.api.common.v1 import Payload

    payload = Payload()
    payload.ParseFromString(base64.b64decode(wire))
    return payload


PUBLISH_SIGNAL = "__temporal_workflow_stream_publish"
"""The signal a workflow stream takes published batches by (``PublishInput``)."""


def stream_item(topic: str, payload: Payload, offset: int) -> Any:
    """A workflow stream item as its poll answers it (the wire form)."""
    from temporalio.contrib.workflow_streams._types import (
        _encode_payload,
        _WorkflowStreamWireItem,
    )

    return _WorkflowStreamWireItem(topic=topic, data=_encode_payload(payload), offset=offset)


def wire_stream_item(topic: str, data: str, offset: int) -> Any:
    """A workflow stream item as its poll answers it, from a published entry's ``data``."""
    from temporalio.contrib.workflow_streams._types import _WorkflowStreamWireItem

    return _WorkflowStreamWireItem(topic=topic, data=data, offset=offset)


def update_settled(handle: WorkflowUpdateHandle[Any]) -> bool:
    """Whether an Update's outcome came back with ``start_update`` already (a
    validator's refusal does: ``start_update`` keeps it without raising)."""
    return handle._known_outcome is not None  # noqa: SLF001
