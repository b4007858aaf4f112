"""Workflow side of threads by reference: answer the ``ratchet.thread`` query.

Every ``AgentRunner`` in a workflow registers its thread log here, so a worker
that receives a turn for a log it has never seen can page the messages in from
the workflow. The workflow's log is rebuilt from history on replay, so the
answer is always the checkpointed one.
"""

from __future__ import annotations

from collections.abc import Callable

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from ratchet.types import ThreadData, approximate_size
    from ratchet.wire import THREAD_QUERY, LogInfo, ThreadPage, ThreadPageRequest

    from ._registry import query_registry


class ThreadRegistry:
    """The thread logs of one workflow, by id."""

    def __init__(self) -> None:
        self._threads: dict[str, Callable[[], ThreadData]] = {}

    def register(self, thread: Callable[[], ThreadData]) -> None:
        """Register a thread by id; it is read when a query comes."""
        self._threads[thread().id] = thread

    def page(self, request: ThreadPageRequest) -> ThreadPage:
        source = self._threads.get(request.thread_id)
        thread = source() if source is not None else None
        if thread is None or thread.id != request.thread_id:
            raise ApplicationError(
                f"This workflow holds no thread {request.thread_id!r}; known: "
                f"{', '.join(sorted(self._threads)) or '(none)'}.",
                type="ThreadResolutionError",
            )
        # A run continuing a thread holds only the messages after its base.
        offset = thread.offset
        if thread.base is not None and request.start < offset:
            # The run named by the base holds the earlier messages (an earlier workflow
            # run of this one, or a fork's source).
            return ThreadPage(next=request.start, base=thread.base)
        end = min(request.end, thread.length)
        messages, size = [], 0
        for message in thread.messages[request.start - offset : end - offset]:
            size += approximate_size(message)
            if messages and size > request.max_bytes:
                break
            messages.append(message)
        before = request.start - 1 - offset
        before_id = (
            thread.messages[before].id
            if 0 <= before < len(thread.messages)
            else (thread.base.last_id if thread.base and before == -1 else None)
        )
        return ThreadPage(
            messages=messages, next=request.start + len(messages), before_id=before_id
        )


def log_info(thread: ThreadData, *, base: bool = True) -> LogInfo:
    """Where ``thread`` is (id, length, view, cursor, and with ``base`` the run that
    holds its earlier messages), without its messages."""
    return LogInfo(
        thread_id=thread.id,
        length=thread.length,
        kind=thread.kind,
        cursor=thread.cursor,
        view=thread.view,
        base=thread.base if base else None,
    )


def thread_registry() -> ThreadRegistry:
    """This workflow's registry, installing its query handler on first use."""
    return query_registry(THREAD_QUERY, ThreadRegistry, "page")
