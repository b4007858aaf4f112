"""Following a run or a session live, from outside (client side).

A run's events come from its workflow's stream; a session's stream says when
each run starts and finishes, and :func:`session_events` follows each run's own
stream in between. Iteration ends when the workflow closes (a closed run's
retained events are still read first).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

from temporalio.client import Client
from temporalio.contrib.workflow_streams import WorkflowStreamClient

from ratchet.activities.events import EVENTS_TOPIC
from ratchet.agents.events import RunEvent

POLL_COOLDOWN = timedelta(milliseconds=100)


async def run_events(
    client: Client, workflow_id: str, *, from_offset: int = 0
) -> AsyncIterator[RunEvent]:
    """The events of one run, in order, each once (across continue-as-new too)."""
    stream = WorkflowStreamClient.create(client, workflow_id)
    seen: set[tuple[str, int, int, int]] = set()
    async for item in stream.subscribe(
        [EVENTS_TOPIC], from_offset, result_type=RunEvent, poll_cooldown=POLL_COOLDOWN
    ):
        event = item.data
        if event.attempt:  # sent by a turn: a batch re-sent after a lost reply is dropped
            key = (event.run_id, event.turn, event.attempt, event.seq)
            if key in seen:
                continue
            seen.add(key)
        yield event


async def session_events(
    client: Client, session_id: str, *, from_offset: int = 0
) -> AsyncIterator[RunEvent]:
    """The session's events, with each of its runs' events between that run's
    ``run_started`` and ``run_finished``."""
    async for event in run_events(client, session_id, from_offset=from_offset):
        yield event
        if event.kind == "run_started" and event.run_id:
            async for inner in run_events(client, event.run_id):
                if inner.kind != "run_started":  # the session already said so
                    yield inner
