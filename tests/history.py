"""Reading a run's Temporal history in tests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import temporalio.converter
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent

from ratchet.client import RunHandle, SessionHandle

T = TypeVar("T")


async def events(handle: RunHandle | SessionHandle) -> list[HistoryEvent]:
    """The history of the workflow's latest run."""
    return [e async for e in handle.workflow.fetch_history_events()]


async def until(read: Callable[[], Awaitable[T]], check: Callable[[T], Any]) -> T:
    """Read until ``check`` holds: a wait on state the workflow reports by query
    (bounded by the test's timeout, not by a guess at how long it takes)."""
    delay = 0.01
    while not check(value := await read()):
        await asyncio.sleep(delay)
        delay = min(0.2, delay * 2)
    return value


def of_type(history: list[HistoryEvent], kind: int) -> list[HistoryEvent]:
    return [e for e in history if e.event_type == kind]


async def turn_activities(handle: RunHandle) -> list[HistoryEvent]:
    """The ActivityTaskScheduled events of a run (one per turn)."""
    return of_type(await events(handle), EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)


async def attempts(handle: RunHandle) -> list[int]:
    """The attempt number each completed-or-failed turn ended on."""
    started = of_type(await events(handle), EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED)
    return [e.activity_task_started_event_attributes.attempt for e in started]


def summary(event: HistoryEvent) -> str:
    """The UI summary an event carries (user metadata)."""
    (value,) = temporalio.converter.default().payload_converter.from_payloads(
        [event.user_metadata.summary]
    )
    return value
