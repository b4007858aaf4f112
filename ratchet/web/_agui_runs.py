"""Which part of a session's event stream an AG-UI run is.

An AG-UI run is a stretch of one Ratchet run's events: a send's run from its
``run_started`` (which names the send's request id, ``agui-<runId>``), a resumed
run from the decisions that resumed it, each up to its first ending: the run
finishing, or waiting for someone. A POST that re-attaches (``Last-Event-ID``, or
the same input sent again) streams the stretch its ``runId`` names and reports how
*that* stretch ended, whatever the session did since.
"""

from __future__ import annotations

from dataclasses import dataclass

from ratchet.client import AgentClient, SessionHandle, read_events
from ratchet.errors import InvalidInputError
from ratchet.types import AgentStatus, ExecutionRecord, RunEvent, RunFinished, StatusChanged

from ._agui_events import Translation

WAITING = (AgentStatus.AWAITING_APPROVAL, AgentStatus.AWAITING_INPUT, AgentStatus.AWAITING_CLIENT)

Item = tuple[int, RunEvent]


def ends(event: RunEvent) -> bool:
    """Whether an AG-UI run ends with ``event``: its Ratchet run finished, or waits
    (for a person, or for the client's tool results)."""
    return isinstance(event, RunFinished) or (
        isinstance(event, StatusChanged) and event.status in WAITING
    )


def request_id(run_id: str) -> str:
    """The request id of the send an AG-UI run makes (a retried POST sends nothing twice)."""
    return f"agui-{run_id}"


@dataclass
class Follow:
    """What a response streams: the run's events from ``start`` on, until its ending."""

    run: Translation
    start: int
    ended: Item | None = None
    """The run ended already, so: nothing to stream, report this ending."""
    live: bool = True
    """``False``: there is nothing to follow (report the thread as it is)."""
    fresh: bool = False
    """The stream starts where this POST's input took effect: the client holds what
    it sent, then what is streamed (``agui_snapshot``)."""

    @property
    def first_id(self) -> int:
        """The SSE id of ``RUN_STARTED``: a client that got only that resumes at ``start``."""
        return self.start - 1


async def send_run(
    client: AgentClient, session: SessionHandle, run_id: str, after: int, *, started: bool
) -> Follow:
    """The run of the send AG-UI run ``run_id`` made, from just after offset ``after``
    (the events up to it are kept, not streamed): followed as it goes, or its ending
    if it has ended by then. A send whose run has not ``started`` yet (its message is
    queued) is followed from its ``run_started``; a started one whose ``run_started``
    the stream no longer holds is long over."""
    run = Translation(session.id, None, request_id=request_id(run_id))
    end = await session.event_offset()
    items = await read_events(client.temporal, session.id, 0, until=end, strict=False)
    found = False
    for offset, event in items:
        if not run.mine(event):
            continue
        found = True
        if offset > after:
            break
        run.note(event)
        if ends(event):
            return Follow(run, after + 1, ended=(offset, event))
    if not found and started:
        return Follow(run, after + 1, live=False)  # started before what the stream holds
    return Follow(run, after + 1)


async def run_at(client: AgentClient, session: SessionHandle, offset: int) -> Follow:
    """The run the event at ``offset`` belongs to (a re-attaching client's last id),
    from just after it."""
    found = await read_events(client.temporal, session.id, offset, until=offset + 500)
    if not found or found[0][0] != offset:
        raise InvalidInputError(f"Last-Event-ID {offset} is not an event of session {session.id}.")
    # The workflow's events name the run (a 0.1.0 turn's named the session).
    named = next((event.run_id for _, event in found if not event.attempt), None)
    label = named or (await session.status()).current_run or session.id
    return Follow(await current(session, label), offset + 1)


async def current(session: SessionHandle, label: str | None) -> Translation:
    """A translation of the session's run ``label`` (the one in progress, or the last),
    with its execution id."""
    try:  # the run in progress, else the last one the session ran
        execution = await session.workflow.query("execution", result_type=ExecutionRecord)
    except Exception:  # noqa: BLE001 - none yet (the query answers null)
        return Translation(session.id, label)
    return Translation(session.id, label, execution_id=execution.execution_id)
