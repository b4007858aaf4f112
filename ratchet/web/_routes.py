"""The ``/v1`` routes: agents, sessions, messages, events, decisions, state, runs."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request, status
from fastapi.responses import JSONResponse, StreamingResponse

from ratchet.client import (
    AgentClient,
    RunHandle,
    SessionDeletion,
    SessionHandle,
    TurnRecord,
    WorkflowSummary,
)
from ratchet.errors import (
    AgentNotFoundError,
    EventsExpiredError,
    InvalidInputError,
    NotFoundError,
    SessionNotFoundError,
)
from ratchet.types import Decision, PendingView, ThreadData
from ratchet.wire import SessionStatus, request_id_problem

from . import _sse as sse
from ._bodies import Created, NewDecision, NewFork, NewMessage, NewSession, full, out
from ._guards import check_new
from ._principal import ANONYMOUS, Principal
from ._problems import Gone

SSE = "text/event-stream"
INBOX_WAIT = 5.0
"""Seconds the approvals inbox waits for one workflow's pending work."""
log = logging.getLogger("ratchet.web")
SNAPSHOT_MESSAGES = 100
"""A 410's snapshot holds the thread's latest messages, this many at most."""


async def principal(request: Request) -> Principal:
    """The caller, from the app's ``auth`` (an ``Authenticator`` or a bare callable)."""
    auth = request.app.state.auth
    if auth is None:
        return ANONYMOUS
    authenticate = getattr(auth, "authenticate", auth)
    found = authenticate(request)
    return await found if inspect.isawaitable(found) else found


async def identity(caller: Annotated[Principal, Depends(principal)]) -> str:
    return caller.identity


api = APIRouter(prefix="/v1", dependencies=[Depends(principal)])
Caller = Annotated[Principal, Depends(principal)]
Who = Annotated[str, Depends(identity)]


def client_of(request: Request) -> AgentClient:
    return request.app.state.client


def _streams(request: Request) -> bool:
    return SSE in request.headers.get("accept", "")


@api.get("/agents")
async def list_agents(request: Request) -> dict[str, list[str] | None]:
    """The agents sessions may be started with (``None``: not configured)."""
    return {"agents": request.app.state.agents}


def may_read_reports(request: Request, who: str) -> bool:
    """Whether ``who`` may read evaluation reports here (anyone, without tokens)."""
    state = request.app.state
    return state.auth is None or who in state.report_readers


@api.get("/server")
async def server(request: Request, who: Who) -> dict[str, int | bool]:
    """This process's live streams: ``subscriptions`` to Temporal (one per watched
    session or run) shared by its ``watchers``; and whether ``GET /v1/evals`` serves
    the caller ``reports`` (so a page asks for none where it would get a 404 or 403)."""
    hub = request.app.state.hub
    reports = request.app.state.reports is not None and may_read_reports(request, who)
    return {"subscriptions": hub.subscriptions, "watchers": hub.watchers, "reports": reports}


@api.post("/sessions", status_code=status.HTTP_201_CREATED, response_model=Created)
async def create_session(body: NewSession, request: Request) -> JSONResponse:
    known = request.app.state.agents
    if known is not None and body.agent not in known:
        raise AgentNotFoundError(body.agent, known)
    session = await client_of(request).start_session(
        body.agent, session_id=body.session_id, options=body.options, state=body.state
    )
    return out(Created(id=session.id), 201)


@api.get("/sessions", response_model=list[WorkflowSummary])
async def list_sessions(
    request: Request,
    status_: Annotated[str | None, Query(alias="status")] = None,
    agent: str | None = None,
    min_tokens: Annotated[int | None, Query(ge=0)] = None,
    min_cost_usd: Annotated[float | None, Query(ge=0)] = None,
    runs: bool = False,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> JSONResponse:
    """Newest first, from the search attributes (a visibility query)."""
    found = await client_of(request).list_sessions(
        runs=runs,
        status=status_,
        agent=agent,
        min_tokens=min_tokens,
        min_cost_usd=min_cost_usd,
        limit=limit,
    )
    return out(found)


@api.get("/approvals", response_model=list[PendingView])
async def approvals_inbox(
    request: Request, limit: Annotated[int, Query(ge=1, le=500)] = 100
) -> JSONResponse:
    """Everything any session or run waits for a person to decide, oldest first.
    Read from each at once; one whose worker does not answer within
    ``INBOX_WAIT`` seconds is left out (and logged), not the whole inbox."""
    client = client_of(request)
    rows = await client.list_sessions(
        runs=True,
        status=("AWAITING_APPROVAL", "AWAITING_INPUT"),
        where={"ExecutionStatus": "Running"},
        limit=limit,
    )

    async def pending_of(row: WorkflowSummary) -> list[PendingView]:
        target = client.get_session(row.id) if row.kind == "session" else client.get_run(row.id)
        try:
            async with asyncio.timeout(INBOX_WAIT):
                return await target.pending()
        except Exception as e:  # noqa: BLE001 - one silent workflow must not hide the rest
            log.warning("approvals inbox: left out %s (%s: %s)", row.id, type(e).__name__, e)
            return []

    found = await asyncio.gather(*(pending_of(row) for row in rows))
    waiting = [view for views in found for view in views]
    return out(sorted(waiting, key=lambda view: view.waiting_since))


@api.get("/sessions/{session_id}", response_model=SessionStatus)
async def get_session(session_id: str, request: Request) -> JSONResponse:
    return out(await client_of(request).get_session(session_id).status())


@api.delete("/sessions/{session_id}", response_model=SessionDeletion)
async def delete_session(session_id: str, request: Request, force: bool = False) -> JSONResponse:
    """Deletes the session and everything of it (``AgentClient.delete_session``). An
    unknown id, one deleted already, or one that is not a session answers 404 alike;
    a session that forks read from answers 409 naming them, unless ``?force=true``."""
    unknown = SessionNotFoundError(f"There is no session {session_id!r}.")
    try:
        deleted = await client_of(request).delete_session(session_id, force=force)
    except NotFoundError:
        raise unknown from None
    if not deleted.found:
        raise unknown
    return out(deleted)


@api.post("/sessions/{session_id}/close", response_model=SessionStatus)
async def close_session(session_id: str, request: Request) -> JSONResponse:
    """Messages already queued finish first; then the session takes no more."""
    return out(await client_of(request).get_session(session_id).close())


@api.post("/sessions/{session_id}/stop", response_model=SessionStatus)
async def stop_run(session_id: str, request: Request) -> JSONResponse:
    """Stops the run in progress at its next safe point; the session goes on."""
    return out(await client_of(request).get_session(session_id).stop())


@api.post("/sessions/{session_id}/messages", response_model=None)
async def send_message(
    session_id: str,
    body: NewMessage,
    request: Request,
    idempotency_key: Annotated[str | None, Header()] = None,
) -> dict[str, Any] | StreamingResponse:
    """Runs the agent on the message. With ``Accept: text/event-stream`` the response
    streams the run's events, then a ``result`` (or ``error``) event. A POST retried
    with the same ``Idempotency-Key`` sends nothing twice: it gets the first one's run."""
    key = idempotency_key
    if key is not None and (problem := request_id_problem(key, "Idempotency-Key")):
        raise InvalidInputError(
            f"{problem} Retry a POST with the key it was sent with, or send no "
            "Idempotency-Key header and the server makes one."
        )
    check_new([body.text], request.app.state.max_message)
    session = client_of(request).get_session(session_id)
    if not _streams(request):
        return sse.result_json(await session.send(body.text, request_id=idempotency_key))
    start = await session.event_offset()
    sending = session.send(body.text, request_id=idempotency_key)
    stream = sse.reply(request.app.state.hub, session, start, sending)
    return StreamingResponse(stream, media_type=SSE, headers=_no_buffering())


@api.get("/sessions/{session_id}/events", response_class=StreamingResponse)
async def session_events(
    session_id: str,
    request: Request,
    after: Annotated[int | None, Query(ge=-1)] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    """The session's events as they happen (SSE). Resume with ``Last-Event-ID`` (or
    ``?after=``); an id older than the retained events answers 410 with a snapshot."""
    return await _follow(request, client_of(request).get_session(session_id), after, last_event_id)


@api.get("/runs/{run_id}/events", response_class=StreamingResponse)
async def run_events(
    run_id: str,
    request: Request,
    after: Annotated[int | None, Query(ge=-1)] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    return await _follow(request, client_of(request).get_run(run_id), after, last_event_id)


@api.get("/sessions/{session_id}/pending", response_model=list[PendingView])
async def pending(session_id: str, request: Request) -> JSONResponse:
    return out(await client_of(request).get_session(session_id).pending())


@api.post("/sessions/{session_id}/decisions", response_model=Decision)
async def decide(session_id: str, body: NewDecision, request: Request, who: Who) -> JSONResponse:
    """Approve or reject a pending tool call, or answer a question; recorded with the
    caller's identity as ``by``. A call decided already answers 409."""
    session = client_of(request).get_session(session_id)
    request.app.state.hub.poke(session_id)  # the run goes on: its watchers look sooner
    if body.scope == "session" and body.decision != "approve":
        raise InvalidInputError(
            "scope 'session' goes with an approval (allow the tool for the rest of the "
            "session); to stop a tool running, change the session's approval rules."
        )
    if body.decision == "approve":
        return out(await session.approve(body.id, by=who, always=body.scope == "session"))
    if body.decision == "reject":
        return out(await session.reject(body.id, body.reason, by=who))
    if body.answer is None:
        raise InvalidInputError("An 'answer' decision needs the 'answer' text.")
    return out(await session.provide_input(body.id, body.answer, by=who))


@api.get("/sessions/{session_id}/thread")
async def thread(
    session_id: str,
    request: Request,
    after: Annotated[int | None, Query(ge=0)] = None,
    last: Annotated[int | None, Query(ge=0)] = None,
    limit: Annotated[int | None, Query(ge=0)] = None,
) -> dict[str, Any]:
    """The session's messages, in order (failed sends' included: see ``view``):
    every one, or those after the first ``after``, or the latest ``last``; at most
    ``limit``. ``start`` is the position of the first one returned (from 0)."""
    session = client_of(request).get_session(session_id)
    return _thread_json(await session.thread(after=after, last=last, limit=limit))


def _thread_json(thread: ThreadData) -> dict[str, Any]:
    return {**full(thread), "start": thread.offset}


@api.get("/sessions/{session_id}/state")
async def state(session_id: str, request: Request) -> dict[str, Any]:
    """The agents' keyed state as JSON-ready data (start a session from it)."""
    return await client_of(request).get_session(session_id).export_state()


@api.post(
    "/sessions/{session_id}/fork", status_code=status.HTTP_201_CREATED, response_model=Created
)
async def fork(session_id: str, body: NewFork, request: Request) -> JSONResponse:
    forked = await client_of(request).fork(
        session_id, at_turn=body.at_turn, at_message=body.at_message, session_id=body.session_id
    )
    return out(Created(id=forked.id), 201)


@api.get("/sessions/{session_id}/turns", response_model=list[TurnRecord])
async def session_turns(session_id: str, request: Request) -> JSONResponse:
    return out(await client_of(request).get_session(session_id).turns())


@api.get("/runs/{run_id}/turns", response_model=list[TurnRecord])
async def run_turns(run_id: str, request: Request) -> JSONResponse:
    return out(await client_of(request).get_run(run_id).turns())


@api.get("/runs/{run_id}")
async def run_result(run_id: str, request: Request) -> dict[str, Any]:
    """Waits for the run to end and returns how it ended."""
    return sse.result_json(await client_of(request).get_run(run_id).result())


async def _follow(
    request: Request, target: SessionHandle | RunHandle, after: int | None, last_id: str | None
) -> StreamingResponse:
    if last_id is not None:
        after = sse.event_id(last_id)
    stream = sse.follow(request.app.state.hub, target.id, after)
    try:
        first = await anext(stream)  # a 410 must be an answer, not a broken stream
    except EventsExpiredError as e:
        raise Gone(e, await _snapshot(target)) from e
    except StopAsyncIteration:
        first = ""

    async def rest() -> AsyncIterator[str]:
        yield first
        async for chunk in stream:
            yield chunk

    return StreamingResponse(rest(), media_type=SSE, headers=_no_buffering())


async def _snapshot(target: SessionHandle | RunHandle) -> dict[str, Any]:
    if isinstance(target, SessionHandle):
        status_ = await target.status()
        thread_ = await target.thread(last=SNAPSHOT_MESSAGES)
        return {
            "status": full(status_),
            "thread": _thread_json(thread_),
        }
    return {"state": full(await target.record())}


def _no_buffering() -> dict[str, str]:
    return {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
