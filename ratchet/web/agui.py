"""``POST /v1/agui/{agent}``: an AG-UI endpoint over durable sessions.

An AG-UI thread is a Ratchet session (``threadId`` is its id; the first run
starts it with the agent named in the URL or in ``forwardedProps.agent``), and
one POST is one run. AG-UI clients send the conversation as they hold it every
time: messages whose ids the session holds are skipped, the rest are sent. The
held ones must be consecutive messages of the thread and new ones must follow its
last message, so a history that skips or reorders held messages, or adds new ones
before the thread's end, is refused (409); one that leaves out the earliest
messages is not (a long thread is read only as far back as the POST reaches).
``runId`` is the send's Update id, so a retried POST sends nothing twice, and a
POST with ``Last-Event-ID`` re-attaches to the run and continues after that event.

A run that stops for an approval or a question finishes with an ``interrupt``
outcome; the next run's ``resume`` entries answer it (``resolved`` with ``true``
/ ``{"approved": true}`` or ``false`` / ``{"approved": false, "reason": ...}``
for a tool call, the answer's text or ``{"answer": ...}`` for a question;
``cancelled`` rejects a call and cancels a run waiting for an answer). Each run
ends with a ``MESSAGES_SNAPSHOT`` of the thread's latest messages (at most
``SNAPSHOT_MESSAGES``; ``GET /v1/sessions/{id}/thread`` pages back through the
rest), which replaces what was streamed (a retried turn's text included).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

from ag_ui.core import (
    BaseEvent,
    MessagesSnapshotEvent,
    ResumeEntry,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
)
from ag_ui.core import Message as AguiMessage
from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import StreamingResponse

from ratchet.agents.events import RunFinished, StateChangedEvent, StatusChanged
from ratchet.agents.messages import Message
from ratchet.agents.pending import PendingView
from ratchet.agents.state import AgentStatus, ThreadData
from ratchet.client import AgentClient, SessionHandle
from ratchet.client.events import read_events
from ratchet.errors import (
    AgentNotFoundError,
    ConversationConflictError,
    DecisionError,
    InvalidInputError,
    SessionBusyError,
    SessionNotFoundError,
)
from ratchet.wire.sessions import SessionStatus

from . import agui_events as translate
from . import sse
from .hub import Hub
from .routes import Who, client_of, identity

SSE = "text/event-stream"
SNAPSHOT_MESSAGES = 100
"""A ``MESSAGES_SNAPSHOT`` holds the thread's latest messages, this many at most."""
BEHIND_MAX = 1000
"""How many messages past those it sent a POST's first message may be (a retried
POST's run may have added some) before it no longer counts as held."""
WAITING = (AgentStatus.AWAITING_APPROVAL, AgentStatus.AWAITING_INPUT)
_STOPPED = "\0stopped"  # a run label no run has: nothing to follow

agui = APIRouter(prefix="/v1/agui", dependencies=[Depends(identity)], tags=["AG-UI"])


@agui.post("", response_class=StreamingResponse)
@agui.post("/{agent}", response_class=StreamingResponse)
async def run_agent(
    body: RunAgentInput,
    request: Request,
    who: Who,
    agent: str | None = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    """Runs the agent on the thread (an AG-UI ``RunAgentInput``); the response is the
    run's AG-UI events as SSE, each with the session event's offset as its ``id``."""
    client = client_of(request)
    name = _agent(request, agent, body)
    session, status = await _session(client, body, name)
    state = translate.state_of(await session.read_state(), name)  # before the run changes it
    after = sse.event_id(last_event_id)
    if after is not None:  # re-attach: the run of that event, from just after it
        start, label, follow = after + 1, await _run_of(client, session, after), True
    else:
        start = await session.event_offset()
        label, follow = await _prepare(session, status, body, who)
    hub: Hub = request.app.state.hub
    stream = _stream(hub, session, body, (start, label if follow else _STOPPED), (name, state))
    return StreamingResponse(stream, media_type=SSE, headers={"Cache-Control": "no-cache"})


def _agent(request: Request, agent: str | None, body: RunAgentInput) -> str:
    props = body.forwarded_props if isinstance(body.forwarded_props, dict) else {}
    name = agent or props.get("agent")
    if not isinstance(name, str) or not name:
        raise InvalidInputError(
            "Name the agent: POST /v1/agui/{agent}, or forwardedProps.agent in the input."
        )
    known = request.app.state.agents
    if known is not None and name not in known:
        raise AgentNotFoundError(name, known)
    return name


async def _session(
    client: AgentClient, body: RunAgentInput, agent: str
) -> tuple[SessionHandle, SessionStatus | None]:
    """The thread's session, started on its first run, and its status (``None``:
    just started, nothing in progress)."""
    session = client.get_session(body.thread_id)
    try:
        status = await session.status()
    except SessionNotFoundError:
        return await client.start_session(agent, session_id=body.thread_id), None
    if status.agent != agent:
        raise ConversationConflictError(
            f"Thread {body.thread_id} is a session of agent {status.agent!r}, not {agent!r}."
        )
    return session, status


async def _prepare(
    session: SessionHandle, status: SessionStatus | None, body: RunAgentInput, who: str
) -> tuple[str | None, bool]:
    """Answer the interrupts in ``resume``, or send the messages the session does not
    hold. The run to follow (``None``: the one the send starts), and whether there
    is anything to follow (not when the run waits, or none is in progress)."""
    status = status or await session.status()
    if body.resume:
        await _resume(session, body.resume, who)
        return status.current_run, not await session.pending()
    new = _new_messages(body.messages, await _latest(session, body.messages))
    if not new:  # a retried POST: its message was sent, follow its run (if still going)
        going = status.current_run is not None and status.run_status not in WAITING
        return status.current_run, going
    if status.current_run is not None:
        raise SessionBusyError(
            f"Session {session.id} has a run in progress"
            + (
                f" that waits for {'; '.join(status.waiting_for)}: answer it with resume entries."
                if status.waiting_for
                else "; send again when it has finished."
            )
        )
    await session.submit(new, request_id=f"agui-{body.run_id}")
    return None, True


async def _run_of(client: AgentClient, session: SessionHandle, offset: int) -> str:
    """The run the event at ``offset`` belongs to (a re-attaching client's last id)."""
    found = await read_events(client.temporal, session.id, offset, until=offset + 500)
    if not found or found[0][0] != offset:
        raise InvalidInputError(f"Last-Event-ID {offset} is not an event of session {session.id}.")
    # A turn's events name the session; the workflow's name the run.
    named = next((event.run_id for _, event in found if not event.attempt), None)
    return named or (await session.status()).current_run or session.id


async def _latest(session: SessionHandle, sent: list[AguiMessage]) -> ThreadData:
    """The thread's latest messages, as many as it takes to find the first message
    sent (a client holds the latest ones a snapshot gave it, and a retried POST may
    lack the reply it never got), up to ``BEHIND_MAX`` more than were sent."""
    first = sent[0].id if sent else None
    count = len(sent) + 1
    while True:
        latest = await session.thread(last=count)
        if latest.offset == 0 or count >= len(sent) + BEHIND_MAX:
            return latest
        if any(m.id == first for m in latest.messages):
            return latest
        count = min(2 * count, len(sent) + BEHIND_MAX)


def _new_messages(sent: list[AguiMessage], latest: ThreadData) -> list[Message]:
    """The messages to send: those the session does not hold. The held ones sent
    must be consecutive messages of the thread, in order (``latest`` holds the
    thread's latest ones), and new ones may only follow its last message."""
    held = [m.id for m in latest.messages]
    where = {id_: n for n, id_ in enumerate(held)}
    seen = [m.id for m in sent if m.id in where]
    fresh = [m for m in sent if m.id not in where]
    if seen and seen != held[where[seen[0]] : where[seen[0]] + len(seen)]:
        start = where[seen[0]]
        at = next(n for n, (a, b) in enumerate(zip(seen, held[start:], strict=False)) if a != b)
        raise ConversationConflictError(
            f"The messages sent do not match this thread's from message "
            f"{latest.offset + start + at + 1} on. Send the thread as the last "
            "MESSAGES_SNAPSHOT gave it, with new messages after it."
        )
    up_to_date = not held or (bool(seen) and where[seen[-1]] == len(held) - 1)
    if fresh and (not up_to_date or sent.index(fresh[0]) < len(seen)):
        raise ConversationConflictError(
            f"The thread holds {latest.length} messages and the new ones must follow all of "
            "them: send its latest messages first, as the last MESSAGES_SNAPSHOT gave them."
        )
    for m in fresh:
        if m.role != "user" or not isinstance(m.content, str):
            raise InvalidInputError(
                f"Message {m.id!r}: only new user messages with text content can be sent "
                f"(got a {m.role} message); frontend tools and attachments are not supported."
            )
    return [
        Message(role="user", content=m.content, id=m.id)
        for m in fresh
        if isinstance(m.content, str)
    ]


async def _resume(session: SessionHandle, entries: list[ResumeEntry], who: str) -> None:
    waiting = {view.action.id: view for view in await session.pending()}
    for entry in entries:
        view = waiting.get(entry.interrupt_id)
        if view is None:
            raise DecisionError(
                f"Nothing waits for interrupt {entry.interrupt_id!r} in session {session.id}; "
                f"it waits for {', '.join(waiting) or 'nothing'}."
            )
        await _answer(session, view, entry, who)


async def _answer(session: SessionHandle, view: PendingView, entry: ResumeEntry, who: str) -> None:
    payload, id_ = entry.payload, entry.interrupt_id
    if view.action.kind == "input":
        if entry.status == "cancelled":
            await session.cancel()
            return
        answer = payload.get("answer") if isinstance(payload, dict) else payload
        if not isinstance(answer, str):
            raise InvalidInputError(
                f"Interrupt {id_!r} is a question: resolve it with the answer's text."
            )
        await session.provide_input(id_, answer, by=who)
        return
    if entry.status == "cancelled":
        await session.reject(id_, "cancelled", by=who)
        return
    approved = payload.get("approved") if isinstance(payload, dict) else payload
    if isinstance(payload, dict) and "decision" in payload:
        approved = {"approve": True, "reject": False}.get(payload["decision"])
    if not isinstance(approved, bool):
        raise InvalidInputError(
            f"Interrupt {id_!r} asks for approval: resolve it with true, false, or "
            '{"approved": true|false, "reason": "..."}.'
        )
    if approved:
        await session.approve(id_, by=who)
    else:
        reason = payload.get("reason") if isinstance(payload, dict) else None
        await session.reject(id_, reason if isinstance(reason, str) else None, by=who)


async def _stream(
    hub: Hub,
    session: SessionHandle,
    body: RunAgentInput,
    where: tuple[int, str | None],
    agent_state: tuple[str, dict[str, Any]],
) -> AsyncIterator[str]:
    """The run's AG-UI events: from the session's events at offset ``start`` on, of the
    run ``label`` (``None``: the next run; ``_STOPPED``: none to follow)."""
    (start, label), (agent, state) = where, agent_state
    run = translate.Translation(session.id, label)
    yield _sse(RunStartedEvent(thread_id=body.thread_id, run_id=body.run_id, input=body))
    yield _sse(StateSnapshotEvent(snapshot=state))
    ending: list[BaseEvent] = []
    if label == _STOPPED:
        ending = await _ending(session, body, run, None)  # nothing left to follow
    else:
        try:
            async for item in hub.watch(session.id, start):
                if item is None:
                    yield ": keep-alive\n\n"
                    continue
                offset, event = item
                if not run.mine(event):
                    continue
                out = list(run.events(event))
                if isinstance(event, StateChangedEvent):
                    after = translate.state_of(await session.read_state(), agent)
                    if (change := translate.delta(state, after)) is not None:
                        out.append(change)
                    state = after
                if isinstance(event, RunFinished) or (
                    isinstance(event, StatusChanged) and event.status in WAITING
                ):
                    ending = await _ending(session, body, run, event)
                    for e in out:
                        yield _sse(e)
                    break
                for n, e in enumerate(out):
                    yield _sse(e, offset if n == len(out) - 1 else None)
        except Exception as e:  # noqa: BLE001 - the stream ends with the error, as AG-UI says
            ending = [*run.end_text(), RunErrorEvent(message=str(e), code=type(e).__name__)]
    for e in ending:
        yield _sse(e)


async def _ending(
    session: SessionHandle,
    body: RunAgentInput,
    run: translate.Translation,
    event: RunFinished | StatusChanged | None,
) -> list[BaseEvent]:
    """How the run ends: its open text closed, the thread, then RUN_FINISHED with the
    outcome (an interrupt while something waits) or RUN_ERROR."""
    out: list[BaseEvent] = list(run.end_text())
    pending = await session.pending() if not isinstance(event, RunFinished) else []
    for view in pending:
        if view.action.call is not None:
            out.extend(run.call(view.action.call))  # streamed before the interrupt about it
    thread = (await session.thread(last=SNAPSHOT_MESSAGES)).messages
    out.append(MessagesSnapshotEvent(messages=translate.messages(thread)))
    thread_id, run_id = body.thread_id, body.run_id
    status = event.status if isinstance(event, RunFinished) else None
    if status == AgentStatus.FAILED:
        out.append(
            RunErrorEvent(
                message=(event.text if event else None) or "The run failed.", code="RunFailedError"
            )
        )
    elif status == AgentStatus.CANCELLED:
        out.append(
            RunFinishedEvent(
                thread_id=thread_id, run_id=run_id, outcome=RunFinishedCancelledOutcome()
            )
        )
    elif interrupts := translate.interrupts(pending):
        out.append(
            RunFinishedEvent(
                thread_id=thread_id,
                run_id=run_id,
                outcome=RunFinishedInterruptOutcome(interrupts=interrupts),
            )
        )
    else:
        final = next((m.text for m in reversed(thread) if m.role == "assistant" and m.text), None)
        out.append(RunFinishedEvent(thread_id=thread_id, run_id=run_id, result=final))
    return out


def _sse(event: BaseEvent, event_id: int | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}data: {event.model_dump_json(by_alias=True, exclude_none=True)}\n\n"
