"""The SSE response of an AG-UI run: ``RUN_STARTED``, the state, the run's events
as they happen, then how it ended (a ``MESSAGES_SNAPSHOT`` and ``RUN_FINISHED`` or
``RUN_ERROR``).

Every frame that stands for a session event carries its offset as the SSE ``id``;
``RUN_STARTED`` carries the offset just before the run's first event, so a client
cut off at any point resumes with ``Last-Event-ID`` exactly where it was.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from ag_ui.core import (
    PROTOCOL_VERSION,
    BaseEvent,
    Interrupt,
    MessagesSnapshotEvent,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
)
from fastapi.responses import StreamingResponse

from ratchet.client import SessionHandle
from ratchet.types import (
    AgentStatus,
    Message,
    Retry,
    RunEvent,
    RunFinished,
    StateChangedEvent,
    StatusChanged,
    ToolCall,
)

from . import _agui_events as translate
from ._agui_runs import Follow, ends
from ._agui_snapshot import catch_up
from ._agui_threads import Threads
from ._hub import Hub

STOPPED = (AgentStatus.CANCELLED, AgentStatus.INTERRUPTED)


class Response(StreamingResponse):
    """A stream that ends the moment its client hangs up: its events are closed
    then, not when they are collected, so it stops counting as a watcher at once
    (``Hub.watching``: a new message stops a run nobody follows)."""

    async def stream_response(self, send: Any) -> None:
        events = self.body_iterator
        assert isinstance(events, AsyncGenerator)
        async with aclosing(events):
            await super().stream_response(send)


@dataclass
class Reply:
    """What one AG-UI response streams: ``follow`` of ``session``'s events, for the
    input ``body``."""

    hub: Hub
    threads: Threads
    session: SessionHandle
    body: RunAgentInput
    follow: Follow


async def stream(reply: Reply, agent_state: tuple[str, dict[str, Any]]) -> AsyncGenerator[str]:
    """The run's AG-UI events (see the module's docstring)."""
    body, follow = reply.body, reply.follow
    # The client holds its input: echoing it (RUN_STARTED's optional ``input``)
    # would send the whole conversation back.
    started = RunStartedEvent(
        thread_id=body.thread_id, run_id=body.run_id, protocol_version=PROTOCOL_VERSION
    )
    yield frame(started, follow.first_id)
    if agent_state[1] != (body.state or {}):  # the client holds the state it sent
        yield frame(StateSnapshotEvent(snapshot=agent_state[1]))
    if follow.ended is not None or not follow.live:
        for e in await _ending(reply, follow.ended[1] if follow.ended else None):
            yield frame(e)
        return
    async with aclosing(_live(reply, agent_state)) as frames:
        async for text in frames:
            yield text


async def _live(reply: Reply, agent_state: tuple[str, dict[str, Any]]) -> AsyncGenerator[str]:
    """The frames of a run followed as it goes, then of how it ended."""
    run, ending = reply.follow.run, list[BaseEvent]()
    try:
        async with aclosing(reply.hub.watch(reply.session.id, reply.follow.start)) as items:
            async for item in items:
                if item is None:
                    yield ": keep-alive\n\n"
                    continue
                offset, event = item
                if not run.mine(event):
                    continue
                out, agent_state = await _translated(reply, event, agent_state)
                if ends(event):
                    ending = [*out, *await _ending(reply, event)]
                    break
                for n, e in enumerate(out):
                    yield frame(e, offset if n == len(out) - 1 else None)
    except GeneratorExit:  # the client hung up (``abortRun()``, or a lost connection)
        reply.hub.hang_up(reply.session.id)
        raise
    except Exception as e:  # noqa: BLE001 - the stream ends with the error, as AG-UI says
        ending = [*run.end_text(), RunErrorEvent(message=str(e), code=type(e).__name__)]
    for e in ending:
        yield frame(e)


async def _translated(
    reply: Reply, event: RunEvent, agent_state: tuple[str, dict[str, Any]]
) -> tuple[list[BaseEvent], tuple[str, dict[str, Any]]]:
    """The AG-UI events a session event of the run makes, and the agent's state after it."""
    (agent, state), run = agent_state, reply.follow.run
    out = list(run.events(event))
    if isinstance(event, Retry):  # what the lost attempt streamed goes
        thread = translate.messages(await _thread(reply, None))
        out.append(MessagesSnapshotEvent(messages=thread))
    if isinstance(event, StateChangedEvent):
        after = translate.state_of(await reply.session.agent_state(), agent)
        if (change := translate.delta(state, after)) is not None:
            out.append(change)
        state = after
    return out, (agent, state)


async def _ending(reply: Reply, event: RunEvent | None) -> list[BaseEvent]:
    """How the run ended with ``event`` (``None``: nothing was followed; the session as
    it is now): its open text closed, the client brought to the thread as of then
    (``agui_snapshot``), then RUN_FINISHED with the outcome (an interrupt while
    something waited) or RUN_ERROR."""
    run, body = reply.follow.run, reply.body
    out: list[BaseEvent] = list(run.end_text())
    interrupts, client_calls = [], []
    if not isinstance(event, RunFinished):
        interrupts, client_calls, calls = await _waits(reply.session, run, event)
        for call, turn in calls:
            out.extend(run.call(call, turn))  # streamed before the outcome that names it
    thread = await _thread(reply, event)
    fix = catch_up(body.messages, thread, run) if reply.follow.fresh else None
    out.extend(
        fix if fix is not None else [MessagesSnapshotEvent(messages=translate.messages(thread))]
    )
    thread_id, run_id = body.thread_id, body.run_id
    status = event.status if isinstance(event, RunFinished) else None
    if status == AgentStatus.FAILED:
        text = (event.text if event else None) or "The run failed."
        out.append(RunErrorEvent(message=text, code="RunFailedError"))
    elif status in STOPPED:
        out.append(
            RunFinishedEvent(
                thread_id=thread_id, run_id=run_id, outcome=RunFinishedCancelledOutcome()
            )
        )
    elif interrupts:
        out.append(
            RunFinishedEvent(
                thread_id=thread_id,
                run_id=run_id,
                outcome=RunFinishedInterruptOutcome(interrupts=interrupts),
            )
        )
    elif client_calls:  # a completed run, whose client tool calls wait for their results
        outcome = RunFinishedSuccessOutcome(pending_tool_call_ids=client_calls)
        out.append(RunFinishedEvent(thread_id=thread_id, run_id=run_id, outcome=outcome))
    else:
        result = _answer(run, event, thread)
        out.append(RunFinishedEvent(thread_id=thread_id, run_id=run_id, result=result))
    return out


async def _waits(
    session: SessionHandle, run: translate.Translation, event: RunEvent | None
) -> tuple[list[Interrupt], list[str], list[tuple[ToolCall, int]]]:
    """What a run ended waiting for: interrupts (approvals, questions), client tool
    calls, and the calls they concern. The session's pending views while they still
    wait; once answered, what the run's events say it waited for."""
    pending = await session.pending()
    interrupts = translate.interrupts(pending)
    clients = [v.action.id for v in pending if v.action.kind == "client"]
    calls = [(v.action.call, v.turn) for v in pending if v.action.call is not None]
    if not isinstance(event, StatusChanged):
        return interrupts, clients, calls
    then = translate.interrupts_then(event.waiting, run)
    then_clients = translate.client_calls_then(event.waiting, run)
    if {i.id for i in then} | set(then_clients) <= {i.id for i in interrupts} | set(clients):
        return interrupts, clients, calls
    turn = run.turns[-1].turn if run.turns else 0
    ids = [*(i.tool_call_id for i in then if i.tool_call_id), *then_clients]
    return then, then_clients, [(run.calls[id_], turn) for id_ in ids if id_ in run.calls]


async def _thread(reply: Reply, event: RunEvent | None) -> list[Message]:
    """The thread as the run left it: up to the last message it made (and, for a run
    that finished, the messages it made after that without ids of ours)."""
    run, thread = reply.follow.run, await reply.threads.read(reply.session)
    made = {run.reply_id(t.turn) for t in run.turns}
    made |= set(run.answered.values())
    last = max((n for n, m in enumerate(thread) if m.id in made), default=None)
    if last is not None and event is not None:
        if isinstance(event, RunFinished):
            while last + 1 < len(thread) and thread[last + 1].role != "user":
                last += 1
        thread = thread[: last + 1]
    return thread


def _answer(
    run: translate.Translation, event: RunEvent | None, thread: list[Message]
) -> str | None:
    """The run's answer: its final turn's, else the last one the thread shows."""
    final = next((t for t in reversed(run.turns) if t.data.final and t.text), None)
    if final is not None:
        return final.text
    if isinstance(event, RunFinished) and event.text:
        return event.text
    return next((m.content for m in reversed(thread) if m.role == "assistant" and m.content), None)


def frame(event: BaseEvent, event_id: int | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}data: {event.model_dump_json(by_alias=True, exclude_none=True)}\n\n"
