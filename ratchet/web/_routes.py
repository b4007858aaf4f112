"""The ``/v1`` routes: agents, sessions, messages, events, decisions, state, runs."""

from __future__ import annotations

import asyncio
import inspect
import logging
import uuid
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
from ._access import Access, Action
from ._auth import AuthError
from ._bodies import Created, NewDecision, NewFork, NewMessage, NewSession, full, out
from ._guards import check_new
from ._principal import ANONYMOUS, Principal
from ._problems import Gone

SSE = "text/event-stream"
INBOX_WAIT = 5.0
"""Seconds the approvals inbox waits for one workflow's pending work."""
log = logging.getLogger("ratchet.web")
MAX_IDENTITY = 255
"""Characters in a caller's identity or tenant (they are indexed with what they own)."""
SNAPSHOT_MESSAGES = 100
"""A 410's snapshot holds the thread's latest messages, this many at most."""


async def principal(request: Request) -> Principal:
    """The caller, from the app's ``auth`` (an ``Authenticator`` or a bare callable)."""
    auth = request.app.state.auth
    if auth is None:
        return ANONYMOUS
    authenticate = getattr(auth, "authenticate", auth)
    found = authenticate(request)
    caller = await found if inspect.isawaitable(found) else found
    for what, value in (("identity", caller.identity), ("tenant", caller.tenant or "-")):
        if not value or len(value) > MAX_IDENTITY:
            raise AuthError(
                f"The caller's {what} must be 1 to {MAX_IDENTITY} characters long (OpenID "
                f"Connect's limit for a subject); got {len(value)}."
            )
    return caller


async def identity(caller: Annotated[Principal, Depends(principal)]) -> str:
    return caller.identity


api = APIRouter(prefix="/v1", dependencies=[Depends(principal)])
Caller = Annotated[Principal, Depends(principal)]
Who = Annotated[str, Depends(identity)]


def client_of(request: Request) -> AgentClient:
    return request.app.state.client


def access_of(request: Request) -> Access:
    return request.app.state.access


async def session_of(
    request: Request,
    caller: Principal,
    session_id: str,
    action: Action = "read",
    *,
    runs: bool = False,
) -> SessionHandle:
    """The caller's session ``session_id`` (or, with ``runs``, run: their decisions
    go through the same route), if they may ``action`` it (else 404)."""
    found = await access_of(request).session(caller, session_id, action, runs=runs)
    return client_of(request).get_session(found)


async def run_of(request: Request, caller: Principal, run_id: str) -> RunHandle:
    """The run ``run_id``, if the caller may read it (else 404)."""
    return client_of(request).get_run(await access_of(request).run(caller, run_id))


def owner_of(caller: Principal) -> tuple[str | None, str | None]:
    """The owner and tenant a caller's new session or fork is indexed with (none
    without auth: ``anonymous`` owns nothing)."""
    if caller is ANONYMOUS:
        return None, None
    return caller.identity, caller.tenant


def _streams(request: Request) -> bool:
    return SSE in request.headers.get("accept", "")


@api.get("/agents")
async def list_agents(request: Request) -> dict[str, list[str] | None]:
    """The agents sessions may be started with (``None``: not configured)."""
    return {"agents": request.app.state.agents}


def may_read_reports(request: Request, caller: Principal) -> bool:
    """Whether ``caller`` may read evaluation reports here (they quote everyone's
    conversations): operators without a tenant, and the named readers."""
    readers = request.app.state.report_readers
    return (caller.operator and caller.tenant is None) or caller.identity in readers


@api.get("/server")
async def server(request: Request, caller: Caller) -> dict[str, int | bool]:
    """This process's live streams (to operators): ``subscriptions`` to Temporal (one
    per watched session or run) shared by its ``watchers``; and whether ``GET /v1/evals`` serves
    the caller ``reports`` (so a page asks for none where it would get a 404 or 403)."""
    hub = request.app.state.hub
    reports = request.app.state.reports is not None and may_read_reports(request, caller)
    if not caller.operator or caller.tenant is not None:  # how busy others are
        return {"reports": reports}
    return {"subscriptions": hub.subscriptions, "watchers": hub.watchers, "reports": reports}


@api.post("/sessions", status_code=status.HTTP_201_CREATED, response_model=Created)
async def create_session(body: NewSession, request: Request, caller: Caller) -> JSONResponse:
    """A session of the caller's. An id they choose is theirs alone (see
    ``ratchet.web._access``): the answer holds the id to use."""
    known = request.app.state.agents
    if known is not None and body.agent not in known:
        raise AgentNotFoundError(body.agent, known)
    access = access_of(request)
    await access.filter(caller, "create")
    run = body.options.run if body.options is not None else None
    if run is not None and not caller.operator and (run.fairness_key or run.fairness_weight):
        raise InvalidInputError(
            "options.run.fairness_key and fairness_weight are the operators' to set (a "
            "caller's turns share the model providers under their own key): leave them out."
        )
    chosen = body.session_id or f"session-{body.agent}-{uuid.uuid4().hex[:12]}"
    owner, tenant = owner_of(caller)
    session = await client_of(request).start_session(
        body.agent,
        session_id=access.session_id(caller, chosen),
        options=body.options,
        state=body.state,
        owner=owner,
        tenant=tenant,
    )
    return out(Created(id=session.id), 201)


@api.get("/sessions", response_model=list[WorkflowSummary])
async def list_sessions(
    request: Request,
    caller: Caller,
    status_: Annotated[str | None, Query(alias="status")] = None,
    agent: str | None = None,
    min_tokens: Annotated[int | None, Query(ge=0)] = None,
    min_cost_usd: Annotated[float | None, Query(ge=0)] = None,
    runs: bool = False,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> JSONResponse:
    """The caller's, newest first, from the search attributes (a visibility query
    filtered by owner: one started a moment ago may be missing for a second)."""
    mine = await access_of(request).filter(caller)
    found = await client_of(request).list_sessions(
        where=mine.where(),
        query=mine.query(),
        runs=runs,
        status=status_,
        agent=agent,
        min_tokens=min_tokens,
        min_cost_usd=min_cost_usd,
        limit=limit,
    )
    return out([row for row in found if mine.holds(row)])


@api.get("/approvals", response_model=list[PendingView])
async def approvals_inbox(
    request: Request, caller: Caller, limit: Annotated[int, Query(ge=1, le=500)] = 100
) -> JSONResponse:
    """Everything any session or run waits for a person to decide, oldest first.
    Read from each at once; one whose worker does not answer within
    ``INBOX_WAIT`` seconds is left out (and logged), not the whole inbox."""
    client = client_of(request)
    mine = await access_of(request).filter(caller)
    rows = await client.list_sessions(
        runs=True,
        status=("AWAITING_APPROVAL", "AWAITING_INPUT"),
        where={"ExecutionStatus": "Running", **mine.where()},
        query=mine.query(),
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

    found = await asyncio.gather(*(pending_of(row) for row in rows if mine.holds(row)))
    waiting = [view for views in found for view in views]
    return out(sorted(waiting, key=lambda view: view.waiting_since))


@api.get("/sessions/{session_id}", response_model=SessionStatus)
async def get_session(session_id: str, request: Request, caller: Caller) -> JSONResponse:
    return out(await (await session_of(request, caller, session_id)).status())


@api.delete("/sessions/{session_id}", response_model=SessionDeletion)
async def delete_session(
    session_id: str, request: Request, caller: Caller, force: bool = False
) -> JSONResponse:
    """Deletes the session and everything of it (``AgentClient.delete_session``). An
    unknown id, one deleted already, or one that is not a session answers 404 alike;
    a session that forks read from answers 409 naming them, unless ``?force=true``."""
    unknown = SessionNotFoundError(f"There is no session {session_id!r}.")
    found = (await session_of(request, caller, session_id, "delete")).id
    try:
        deleted = await client_of(request).delete_session(found, force=force)
    except NotFoundError:
        raise unknown from None
    if not deleted.found:
        raise unknown
    return out(deleted)


@api.post("/sessions/{session_id}/close", response_model=SessionStatus)
async def close_session(session_id: str, request: Request, caller: Caller) -> JSONResponse:
    """Messages already queued finish first; then the session takes no more."""
    return out(await (await session_of(request, caller, session_id, "close")).close())


@api.post("/sessions/{session_id}/stop", response_model=SessionStatus)
async def stop_run(session_id: str, request: Request, caller: Caller) -> JSONResponse:
    """Stops the run in progress at its next safe point; the session goes on."""
    return out(await (await session_of(request, caller, session_id, "stop")).stop())


@api.post("/sessions/{session_id}/messages", response_model=None)
async def send_message(
    session_id: str,
    body: NewMessage,
    request: Request,
    caller: Caller,
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
    session = await session_of(request, caller, session_id, "send")
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
    caller: Caller,
    after: Annotated[int | None, Query(ge=-1)] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    """The session's events as they happen (SSE). Resume with ``Last-Event-ID`` (or
    ``?after=``); an id older than the retained events answers 410 with a snapshot."""
    session = await session_of(request, caller, session_id)
    return await _follow(request, session, after, last_event_id)


@api.get("/runs/{run_id}/events", response_class=StreamingResponse)
async def run_events(
    run_id: str,
    request: Request,
    caller: Caller,
    after: Annotated[int | None, Query(ge=-1)] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    return await _follow(request, await run_of(request, caller, run_id), after, last_event_id)


@api.get("/sessions/{session_id}/pending", response_model=list[PendingView])
async def pending(session_id: str, request: Request, caller: Caller) -> JSONResponse:
    return out(await (await session_of(request, caller, session_id)).pending())


@api.post("/sessions/{session_id}/decisions", response_model=Decision)
async def decide(
    session_id: str, body: NewDecision, request: Request, caller: Caller
) -> JSONResponse:
    """Approve or reject a pending tool call, or answer a question; recorded with the
    caller's identity as ``by``. A call decided already answers 409."""
    session = await session_of(request, caller, session_id, "decide", runs=True)
    who = caller.identity
    request.app.state.hub.poke(session.id)  # the run goes on: its watchers look sooner
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
    caller: Caller,
    after: Annotated[int | None, Query(ge=0)] = None,
    last: Annotated[int | None, Query(ge=0)] = None,
    limit: Annotated[int | None, Query(ge=0)] = None,
) -> dict[str, Any]:
    """The session's messages, in order (failed sends' included: see ``view``):
    every one, or those after the first ``after``, or the latest ``last``; at most
    ``limit``. ``start`` is the position of the first one returned (from 0)."""
    session = await session_of(request, caller, session_id)
    return _thread_json(await session.thread(after=after, last=last, limit=limit))


def _thread_json(thread: ThreadData) -> dict[str, Any]:
    return {**full(thread), "start": thread.offset}


@api.get("/sessions/{session_id}/state")
async def state(session_id: str, request: Request, caller: Caller) -> dict[str, Any]:
    """The agents' keyed state as JSON-ready data (start a session from it)."""
    return await (await session_of(request, caller, session_id)).export_state()


@api.post(
    "/sessions/{session_id}/fork", status_code=status.HTTP_201_CREATED, response_model=Created
)
async def fork(session_id: str, body: NewFork, request: Request, caller: Caller) -> JSONResponse:
    """A session of the caller's from one they may read (ids as for a new session)."""
    source = (await session_of(request, caller, session_id, "fork")).id
    chosen = body.session_id or f"{source}-fork-{uuid.uuid4().hex[:6]}"
    owner, tenant = owner_of(caller)
    forked = await client_of(request).fork(
        source,
        at_turn=body.at_turn,
        at_message=body.at_message,
        session_id=access_of(request).session_id(caller, chosen),
        owner=owner,
        tenant=tenant,
    )
    return out(Created(id=forked.id), 201)


@api.get("/sessions/{session_id}/turns", response_model=list[TurnRecord])
async def session_turns(session_id: str, request: Request, caller: Caller) -> JSONResponse:
    return out(await (await session_of(request, caller, session_id)).turns())


@api.get("/runs/{run_id}/turns", response_model=list[TurnRecord])
async def run_turns(run_id: str, request: Request, caller: Caller) -> JSONResponse:
    return out(await (await run_of(request, caller, run_id)).turns())


@api.get("/runs/{run_id}")
async def run_result(run_id: str, request: Request, caller: Caller) -> dict[str, Any]:
    """Waits for the run to end and returns how it ended."""
    return sse.result_json(await (await run_of(request, caller, run_id)).result())


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
