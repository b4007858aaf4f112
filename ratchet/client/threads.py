"""A run's or session's whole thread, read from outside: the ``log_info`` query
says where the log is, and its messages are paged in from the workflow runs that
hold them (``ratchet.thread`` queries, following each run back to the one before)."""

from __future__ import annotations

from typing import Any

from temporalio.client import Client

from ratchet.activities.thread_log import Holder, fetch_range
from ratchet.agents.messages import Message
from ratchet.agents.state import ThreadData
from ratchet.wire.names import PAGE_BYTES
from ratchet.wire.sessions import LogInfo


async def log_info(handle: Any) -> LogInfo:
    """Where the thread of the workflow behind ``handle`` is (no messages)."""
    return await handle.query("log_info", result_type=LogInfo)


async def read_messages(
    client: Client, workflow_id: str, thread_id: str, start: int, end: int
) -> list[Message]:
    """Messages ``start`` to ``end`` of a log, from the workflow's runs that hold them."""
    holder = Holder(workflow_id, None, thread_id)
    messages, _ = await fetch_range(client, holder, start, end, page_bytes=PAGE_BYTES)
    return messages


async def read_thread(client: Client, handle: Any) -> ThreadData:
    """The whole thread (any length): every message it has had, in order; ``view``
    says which of them its turns send now."""
    info = await log_info(handle)
    messages = await read_messages(client, handle.id, info.thread_id, 0, info.length)
    return ThreadData(
        id=info.thread_id, kind=info.kind, cursor=info.cursor, messages=messages, view=info.view
    )
