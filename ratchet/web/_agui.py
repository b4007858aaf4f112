"""``POST /v1/agui/{agent}``: an AG-UI endpoint over durable sessions.

An AG-UI thread is a Ratchet session (``threadId`` is its id; the first run
starts it with the agent named in the URL or in ``forwardedProps.agent``), and
one POST is one run. AG-UI clients send the whole conversation every time: the
user messages the session does not hold are sent (see ``agui_history`` for what
else a client may hold). ``runId`` names the send (its request id is
``agui-<runId>``), so a retried POST sends nothing twice and re-attaches to the
run it names: from ``Last-Event-ID`` on if given, else from now on, or with how
that run ended if it has (see ``agui_runs``). A message sent while a run is in
progress waits for it, as the session's ``steering`` says (``queue`` by default),
unless nobody follows that run any more: then it stops, and the message runs at
once (``forwardedProps.steering`` chooses otherwise: see ``agui_steering``).

The run's ``tools`` (frontend tools) are offered to the model for the run its POST
sends; a call to one finishes the AG-UI run with the call in ``pendingToolCallIds``
while the session's run waits for its result, which the next run's ``tool`` message
brings (see ``ratchet.agents._client_tools``). A run that stops for an approval or a
question finishes with an ``interrupt`` outcome; the next run's ``resume`` entries
answer it (``resolved`` with ``true`` / ``{"approved": true}`` or ``false`` /
``{"approved": false, "reason": ...}``
for a tool call, the answer's text or ``{"answer": ...}`` for a question;
``cancelled`` rejects a call and cancels a run waiting for an answer). Each run
ends with a ``MESSAGES_SNAPSHOT`` of the session's thread, which replaces what
was streamed (a retried turn's text included).
"""

from __future__ import annotations

import re
from typing import Annotated

from ag_ui.core import ResumeEntry, RunAgentInput
from fastapi import APIRouter, Depends, Header, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from ratchet.client import AgentClient, SessionHandle
from ratchet.errors import (
    AgentNotFoundError,
    ConversationConflictError,
    DecisionError,
    InvalidInputError,
    NotFoundError,
    SessionBusyError,
    SessionNotFoundError,
)
from ratchet.types import AgentStatus, ClientTool, Message, PendingView, tool_problems
from ratchet.wire import SessionStatus

from . import _agui_events as translate
from . import _agui_history as agui_history
from . import _agui_runs as agui_runs
from . import _sse as sse
from ._access import Action
from ._agui_runs import WAITING, Follow, request_id
from ._agui_steering import Steering, make_way, options, steering_of
from ._agui_stream import Reply, Response, stream
from ._bodies import SESSION_ID
from ._guards import check_new
from ._hub import Hub
from ._principal import Principal
from ._routes import Caller, access_of, client_of, owner_of, principal

SSE = "text/event-stream"
MAX_ID = 200
"""Characters in a ``threadId`` (a session id) and in a ``runId`` with its prefix."""

agui = APIRouter(prefix="/v1/agui", dependencies=[Depends(principal)], tags=["AG-UI"])


async def _input(request: Request) -> RunAgentInput:
    """The body, parsed straight from its bytes: an AG-UI client sends the whole
    conversation every time (4 MB at 2,000 messages), and this is twice as fast as
    parsing the JSON first, then checking it."""
    try:
        return RunAgentInput.model_validate_json(await request.body())
    except ValidationError as e:
        errors = [{**error, "loc": ("body", *error["loc"])} for error in e.errors()]
        raise RequestValidationError(errors) from e


_SCHEMA = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": RunAgentInput.model_json_schema()}},
    }
}


@agui.post("", response_class=Response, openapi_extra=_SCHEMA)
@agui.post("/{agent}", response_class=Response, openapi_extra=_SCHEMA)
async def run_agent(
    body: Annotated[RunAgentInput, Depends(_input)],
    request: Request,
    caller: Caller,
    agent: str | None = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> Response:
    """Runs the agent on the thread (an AG-UI ``RunAgentInput``); the response is the
    run's AG-UI events as SSE, each with the session event's offset as its ``id``."""
    _check_ids(body)
    client, who = client_of(request), caller.identity
    name = _agent(request, agent, body)
    after = sse.event_id(last_event_id)
    session, status = await _session(request, caller, body, name)
    if status is None and after is not None:  # nothing to re-attach to; start nothing
        raise SessionNotFoundError(
            f"There is no session {body.thread_id!r}: Last-Event-ID re-attaches to a run "
            "of a thread that exists. Send without it to start the thread."
        )
    threads = request.app.state.threads
    held = await threads.read(session) if status is not None else []
    sent = agui_history.read(body.messages, held, waiting=await _client_calls(session, status))
    check_new([m.text for m in [*sent.new, *sent.results]], request.app.state.max_message)
    tools, steering = _client_tools(body), steering_of(body)
    if status is None:  # the input is sound: now the thread's session starts
        owner, tenant = owner_of(caller)
        session = await client.start_session(
            name, session_id=session.id, options=options(steering), owner=owner, tenant=tenant
        )
    state = translate.state_of(await session.agent_state(), name)  # before the run changes it
    if after is not None:
        follow = await _reattach(client, session, body, after, started=not sent.new)
    else:
        way = (request.app.state.hub, steering)
        follow = await _prepare(client, session, status, body, (sent, tools, way), who)
    reply = Reply(request.app.state.hub, threads, session, body, follow)
    events = stream(reply, (name, state))
    return Response(events, media_type=SSE, headers={"Cache-Control": "no-cache"})


def _check_ids(body: RunAgentInput) -> None:
    if not 0 < len(body.thread_id) <= MAX_ID or not re.match(SESSION_ID, body.thread_id):
        raise InvalidInputError(
            f"threadId must be 1 to {MAX_ID} characters long, without a slash, ?, #, % or "
            f"white space (it is the session's id, in URLs); got {body.thread_id[:60]!r} "
            f"({len(body.thread_id)} characters)."
        )
    if not 0 < len(body.run_id) <= MAX_ID - len(request_id("")):
        raise InvalidInputError(
            f"runId must be 1 to {MAX_ID - len(request_id(''))} characters long; "
            f"got {len(body.run_id)}."
        )


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
    request: Request, caller: Principal, body: RunAgentInput, agent: str
) -> tuple[SessionHandle, SessionStatus | None]:
    """The thread's session and its status (``None``: there is none yet). A thread
    id is the caller's own (``Access.session_id``): someone else's is not found, and
    a thread of theirs by the same name is another session."""
    access, client = access_of(request), client_of(request)
    try:
        # An answer to an interrupt is a decision, as over REST.
        actions: tuple[Action, ...] = ("send", "decide") if body.resume else ("send",)
        session = client.get_session(await access.session(caller, body.thread_id, actions))
        status = await session.status()
    except SessionNotFoundError:
        new = access.session_id(caller, body.thread_id)
        if await _exists(request, new):  # an operator's id, not theirs: refused alike
            raise SessionNotFoundError(f"There is no session {body.thread_id!r}.") from None
        return client.get_session(new), None
    if status.agent != agent:
        raise ConversationConflictError(
            f"Thread {body.thread_id} is a session of agent {status.agent!r}, not {agent!r}."
        )
    return session, status


async def _client_calls(session: SessionHandle, status: SessionStatus | None) -> set[str]:
    """The frontend tool calls the thread's run waits for (their results may come)."""
    if status is None or status.run_status != AgentStatus.AWAITING_CLIENT:
        return set()
    return {v.action.id for v in await session.pending() if v.action.kind == "client"}


async def _prepare(
    client: AgentClient,
    session: SessionHandle,
    status: SessionStatus | None,
    body: RunAgentInput,
    given: tuple[agui_history.Sent, list[ClientTool], tuple[Hub, Steering | None]],
    who: str,
) -> Follow:
    """Answer the interrupts in ``resume`` or the frontend tool calls, or send the new
    messages (with the run's frontend tools, once the run in progress made way);
    what to stream."""
    (sent, tools, way), status = given, status or await session.status()
    if body.resume or sent.results:
        if sent.new:
            raise InvalidInputError(_answers_and_new(body, sent))
        start = await session.event_offset()
        if body.resume:
            await _resume(session, body.resume, who)
        for result in sent.results:  # kept under the ids the client holds them under
            assert result.tool_call_id is not None
            await session.provide_tool_result(
                result.tool_call_id,
                result.text,
                is_error=result.is_error,
                by=who,
                message_id=result.id,
            )
        run = await agui_runs.current(session, status.current_run)
        run.sent_results = {r.tool_call_id for r in sent.results if r.tool_call_id}
        return Follow(run, start, live=not await session.pending(), fresh=True)
    if not sent.new:  # a retried POST: its message was sent; re-attach from now on
        after = await session.event_offset() - 1
        return await agui_runs.send_run(client, session, body.run_id, after, started=True)
    if status.current_run is not None and status.run_status in WAITING:
        how = (
            "send each call's result as a tool message"
            if status.run_status == AgentStatus.AWAITING_CLIENT
            else "answer it with resume entries"
        )
        raise SessionBusyError(
            f"Session {session.id} has a run in progress that waits for "
            f"{'; '.join(status.waiting_for)}: {how}."
        )
    hub, steering = way
    await make_way(hub, session, status, steering, left=sent.unheld)
    start = await session.event_offset()
    await _send(session, sent.new, body.run_id, tools)
    run = translate.Translation(session.id, None, request_id=request_id(body.run_id))
    return Follow(run, start, fresh=True)


def _answers_and_new(body: RunAgentInput, sent: agui_history.Sent) -> str:
    """What is wrong with an input that answers the run and sends new messages."""
    news = ", ".join(repr(m.id) for m in sent.new[:3])
    answers = [
        *(f"resumes interrupt {e.interrupt_id!r}" for e in body.resume or []),
        *(f"sends the result of frontend tool call {r.tool_call_id!r}" for r in sent.results),
    ]
    return (
        f"This input {' and '.join(answers[:3])}, and also sends new messages ({news}). "
        "Send the answer alone (the run it answers goes on), then the new messages in a "
        "run of their own once it has finished."
    )


def _client_tools(body: RunAgentInput) -> list[ClientTool]:
    """The run's frontend tools, which its send offers to the model."""
    tools: list[ClientTool] = []
    for given in body.tools or []:
        if given.parameters is not None and not isinstance(given.parameters, dict):
            raise InvalidInputError(
                f"Tool {given.name!r}: parameters must be a JSON Schema object; "
                f"got {type(given.parameters).__name__}."
            )
        fields = given.model_dump(include={"name", "description", "parameters"})
        try:
            tools.append(ClientTool(**fields))
        except ValidationError as e:
            raise InvalidInputError(f"tools: {e.errors()[0]['msg']}.") from e
    if wrong := tool_problems(tools):
        raise InvalidInputError(f"tools: {wrong[0]}.")
    return tools


async def _send(
    session: SessionHandle, new: list[Message], run_id: str, tools: list[ClientTool]
) -> None:
    try:
        await session.submit(new, request_id=request_id(run_id), client_tools=tools)
    except ConversationConflictError as e:
        raise ConversationConflictError(
            f"runId {run_id!r} was used already, for another message: every run that sends "
            f"a message needs a runId of its own. ({e})"
        ) from e


async def _reattach(
    client: AgentClient, session: SessionHandle, body: RunAgentInput, after: int, *, started: bool
) -> Follow:
    """A client that lost the stream: the run its input names, after event ``after``."""
    if body.resume:  # a resumed run is named by where it was: its last event's run
        return await agui_runs.run_at(client, session, after)
    return await agui_runs.send_run(client, session, body.run_id, after, started=started)


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
            await session.stop()
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


async def _exists(request: Request, workflow_id: str) -> bool:
    """Whether any workflow has this id (a thread's session must not take it)."""
    try:
        await client_of(request).describe(workflow_id)
    except NotFoundError:
        return False
    return True
