"""``POST /v1/agui/{agent}`` against a real ``ratchet web`` and dev server, its
streams parsed with ``ag-ui-protocol``'s own models and checked against the
protocol's order rules."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx2 as httpx
from ag_ui.core import (
    Event,
    EventType,
    MessagesSnapshotEvent,
    RunAgentInput,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    TextMessageContentEvent,
)
from pydantic import TypeAdapter

from ..web_agents import WRITER_WORDS
from ..web_http import new_session, problem_of

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)


def run_input(thread: str, messages: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    body = RunAgentInput.model_validate(
        {"threadId": thread, "runId": run_id, "messages": messages, **more}
    )
    return body.model_dump(mode="json", by_alias=True, exclude_none=True)


def user(text: str) -> dict[str, Any]:
    return {"id": f"m-{uuid.uuid4().hex[:8]}", "role": "user", "content": text}


async def frames(response: httpx.Response) -> AsyncIterator[tuple[int | None, Any]]:
    """(SSE id, AG-UI event parsed by the protocol's models) for each frame."""
    fields: dict[str, str] = {}
    async for line in response.aiter_lines():
        if line == "":
            if "data" in fields:
                event_id = int(fields["id"]) if "id" in fields else None
                yield event_id, EVENTS.validate_json(fields["data"])
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(": ")
            fields[name] = value


async def run(http: httpx.AsyncClient, agent: str, body: dict[str, Any]) -> list[Any]:
    async with http.stream("POST", f"/v1/agui/{agent}", json=body) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [event async for _, event in frames(response)]
    check_order(events, body)
    return events


def check_order(events: list[Any], body: dict[str, Any]) -> None:
    """AG-UI's rules: one RUN_STARTED first, one RUN_FINISHED or RUN_ERROR last; text
    messages started, filled and ended without overlapping; tool calls started,
    given arguments and ended before their result (or made in an earlier run)."""
    kinds = [e.type for e in events]
    assert kinds[0] == EventType.RUN_STARTED and kinds.count(EventType.RUN_STARTED) == 1
    assert kinds[-1] in (EventType.RUN_FINISHED, EventType.RUN_ERROR)
    assert kinds.count(EventType.RUN_FINISHED) + kinds.count(EventType.RUN_ERROR) == 1
    open_text: str | None = None
    calls: dict[str, str] = {}  # id -> "open" | "ended"
    assert events[0].input is None, "the client holds its input: it is not sent back"
    sent = body["messages"]
    earlier = {c["id"] for m in sent if m["role"] == "assistant" for c in m.get("toolCalls", [])}
    for e in events:
        if e.type == EventType.TEXT_MESSAGE_START:
            assert open_text is None, "a text message started inside another"
            open_text = e.message_id
        elif e.type == EventType.TEXT_MESSAGE_CONTENT:
            assert open_text == e.message_id and e.delta
        elif e.type == EventType.TEXT_MESSAGE_END:
            assert open_text == e.message_id
            open_text = None
        else:
            assert open_text is None, f"{e.type} inside an open text message"
        if e.type == EventType.TOOL_CALL_START:
            assert e.tool_call_id not in calls
            calls[e.tool_call_id] = "open"
        elif e.type == EventType.TOOL_CALL_ARGS:
            assert calls.get(e.tool_call_id) == "open"
        elif e.type == EventType.TOOL_CALL_END:
            assert calls.get(e.tool_call_id) == "open"
            calls[e.tool_call_id] = "ended"
        elif e.type == EventType.TOOL_CALL_RESULT:
            # a result after its call: in this run, or in the messages it was given
            assert calls.get(e.tool_call_id) == "ended" or e.tool_call_id in earlier
    assert open_text is None and all(state == "ended" for state in calls.values())
    finished = events[-1]
    if isinstance(finished, RunFinishedEvent) and isinstance(
        finished.outcome, RunFinishedInterruptOutcome
    ):
        for interrupt in finished.outcome.interrupts:
            if interrupt.tool_call_id is not None:
                assert calls.get(interrupt.tool_call_id) == "ended"  # streamed before it


def messages_of(body: dict[str, Any], events: list[Any]) -> list[dict[str, Any]]:
    """The messages a client holds after a run, as ``@ag-ui/client`` applies its
    events: those it sent, each message streamed added, a snapshot's instead."""
    held: list[dict[str, Any]] = [dict(m) for m in body["messages"]]
    by_id = {m["id"]: m for m in held}
    calls: dict[str, dict[str, Any]] = {}
    for e in events:
        made: dict[str, Any] | None = None
        if isinstance(e, MessagesSnapshotEvent):
            held = [m.model_dump(mode="json", by_alias=True, exclude_none=True) for m in e.messages]
            by_id = {m["id"]: m for m in held}
        elif e.type == EventType.TEXT_MESSAGE_START:
            made = {"id": e.message_id, "role": "assistant", "content": ""}
        elif e.type == EventType.TEXT_MESSAGE_CONTENT:
            by_id[e.message_id]["content"] += e.delta
        elif e.type == EventType.TOOL_CALL_START:
            parent = by_id.get(e.parent_message_id or e.tool_call_id)
            if parent is None:
                parent = made = {"id": e.parent_message_id or e.tool_call_id, "role": "assistant"}
            function = {"name": e.tool_call_name, "arguments": ""}
            call = calls[e.tool_call_id] = {"id": e.tool_call_id, "function": function}
            parent.setdefault("toolCalls", []).append({"type": "function", **call})
        elif e.type == EventType.TOOL_CALL_ARGS:
            calls[e.tool_call_id]["function"]["arguments"] += e.delta
        elif e.type == EventType.TOOL_CALL_RESULT:
            made = {"id": e.message_id, "role": "tool", "toolCallId": e.tool_call_id}
            made["content"] = e.content
        if made is not None:
            held.append(made)
            by_id[made["id"]] = made
    return held


async def test_a_streamed_reply_then_a_follow_up_sends_only_the_new_message(
    alice: httpx.AsyncClient,
):
    thread = f"agui-{uuid.uuid4().hex[:8]}"
    first = await run(alice, "writer", opening := run_input(thread, [user("write")]))
    texts = [e.delta for e in first if isinstance(e, TextMessageContentEvent)]
    assert 2 <= len(texts) < WRITER_WORDS  # streamed as it came, coalesced per batch
    finished = first[-1]
    assert isinstance(finished, RunFinishedEvent) and finished.outcome is None
    assert finished.result == "".join(texts) + "(attempt 1)"
    messages = messages_of(opening, first)
    assert [m["role"] for m in messages] == ["user", "assistant"]

    # The client sends the whole conversation again, plus one message.
    second = await run(alice, "writer", again := run_input(thread, [*messages, user("again")]))
    messages = messages_of(again, second)
    assert [m["role"] for m in messages] == ["user", "assistant"] * 2
    state = (await alice.get(f"/v1/sessions/{thread}/thread")).json()
    assert len(state["messages"]) == 4  # nothing held was sent twice
    assert [(m["id"], m["content"]) for m in messages] == [
        (m["id"], m["content"]) for m in state["messages"]
    ]


async def test_an_approval_interrupts_the_run_and_the_next_run_resumes_it(
    alice: httpx.AsyncClient,
):
    thread = await new_session(alice, "billing", options={"run": {"approval_timeout": 3600}})
    first = await run(alice, "billing", opening := run_input(thread, [user("pay acme")]))
    starts = [e for e in first if e.type == EventType.TOOL_CALL_START]
    assert [e.tool_call_name for e in starts] == ["pay"]
    args = "".join(e.delta for e in first if e.type == EventType.TOOL_CALL_ARGS)
    assert '"amount": 500' in args or '"amount":500' in args
    finished = first[-1]
    assert isinstance(finished, RunFinishedEvent)
    assert isinstance(finished.outcome, RunFinishedInterruptOutcome)
    (interrupt,) = finished.outcome.interrupts
    assert interrupt.tool_call_id == starts[0].tool_call_id and interrupt.reason == "approval"
    assert interrupt.expires_at is not None  # from approval_timeout

    resume = [{"interruptId": interrupt.id, "status": "resolved", "payload": {"approved": True}}]
    body = run_input(thread, messages_of(opening, first), resume=resume)
    second = await run(alice, "billing", body)
    results = [e for e in second if e.type == EventType.TOOL_CALL_RESULT]
    assert [e.content for e in results] == ["paid 500 to acme"]
    # The tool ran before the reply that reads it: so in the session's stream, and here.
    kinds = [e.type for e in second]
    assert kinds.index(EventType.TOOL_CALL_RESULT) < kinds.index(EventType.TEXT_MESSAGE_START)
    assert second[-1].result == "Paid 500 euros to acme." and second[-1].outcome is None
    turns = (await alice.get(f"/v1/sessions/{thread}/turns")).json()
    assert len(turns) == 2

    # An interrupt answered already cannot be answered again.
    again = await alice.post("/v1/agui/billing", json=body)
    problem_of(again, 409, "DecisionError")


async def test_a_retried_post_sends_nothing_twice_and_a_lost_stream_reattaches(
    alice: httpx.AsyncClient,
):
    thread = f"agui-{uuid.uuid4().hex[:8]}"
    body = run_input(thread, [user("write")])
    seen: list[tuple[int | None, Any]] = []
    async with alice.stream("POST", "/v1/agui/writer", json=body) as response:
        async for event_id, event in frames(response):
            seen.append((event_id, event))
            if isinstance(event, TextMessageContentEvent) and event_id is not None:
                break  # the connection is lost here
    last_id = max(event_id for event_id, _ in seen if event_id is not None)

    # The same POST again, with the id of the last event it got: the rest of the run.
    headers = {"Last-Event-ID": str(last_id)}
    async with alice.stream("POST", "/v1/agui/writer", json=body, headers=headers) as response:
        rest = [event async for _, event in frames(response)]
    check_order(rest, body)
    streamed = [e.delta for _, e in seen if isinstance(e, TextMessageContentEvent)]
    streamed += [e.delta for e in rest if isinstance(e, TextMessageContentEvent)]
    assert rest[-1].result == "".join(streamed) + "(attempt 1)"  # none lost, none twice

    # Once more without an id: the run is over, nothing is sent again.
    again = await run(alice, "writer", body)
    assert again[-1].result == rest[-1].result
    messages = (await alice.get(f"/v1/sessions/{thread}/thread")).json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]


async def test_bad_requests_get_clear_errors_and_start_nothing(alice: httpx.AsyncClient):
    thread = f"agui-{uuid.uuid4().hex[:8]}"
    problem_of(
        await alice.post("/v1/agui/writer", json={"threadId": thread}), 422, "InvalidInputError"
    )
    bad_id = problem_of(
        await alice.post("/v1/agui/writer", json=run_input("a/b", [user("hi")])),
        422,
        "InvalidInputError",
    )
    assert "without a slash" in bad_id["detail"]
    problem_of(
        await alice.post("/v1/agui/nobody", json=run_input(thread, [user("hi")])),
        404,
        "AgentNotFoundError",
    )
    problem_of(
        await alice.post("/v1/agui", json=run_input(thread, [user("hi")])),
        422,
        "InvalidInputError",
    )
    tool = {"name": "confirm", "description": "", "parameters": {"type": "object"}}
    for tools, why in [
        ([{**tool, "name": "ask me"}], "1 to 64 letters"),
        ([tool, tool], "offers 'confirm' twice"),
    ]:
        refused = await alice.post(
            "/v1/agui/echo", json=run_input(thread, [user("hi")], tools=tools)
        )
        assert why in problem_of(refused, 422, "InvalidInputError")["detail"]
    no_run_id = {**run_input(thread, [user("hi")]), "runId": ""}  # would share "agui-"
    refused = await alice.post("/v1/agui/echo", json=no_run_id)
    assert "runId must be 1 to 195" in problem_of(refused, 422, "InvalidInputError")["detail"]
    assert (await alice.get(f"/v1/sessions/{thread}")).status_code == 404  # nothing started

    first = await run(alice, "echo", opening := run_input(thread, [user("one")]))
    state = [e for e in first if e.type in (EventType.STATE_SNAPSHOT, EventType.STATE_DELTA)]
    # The agent's JSON keys: none yet, as the client's state (no snapshot), then its count.
    assert [op.model_dump() for (e,) in [state] for op in e.delta] == [
        {"op": "add", "path": "/count", "value": 1}
    ]
    second = await run(alice, "echo", run_input(thread, [*messages_of(opening, first), user("2")]))
    (snapshot, _) = [
        e for e in second if e.type in (EventType.STATE_SNAPSHOT, EventType.STATE_DELTA)
    ]
    assert snapshot.snapshot == {"count": 1}  # not the client's state: the agent's
    held = messages_of(opening, first)
    edited = [{**held[0], "content": "changed"} | {"id": "someone-else"}, held[1]]
    problem_of(
        await alice.post("/v1/agui/echo", json=run_input(thread, [*edited, user("two")])),
        409,
        "ConversationConflictError",
    )
    problem_of(
        await alice.post("/v1/agui/writer", json=run_input(thread, [*held, user("two")])),
        409,
        "ConversationConflictError",  # the thread is a session of another agent
    )


async def test_a_lost_stream_of_an_answered_interrupt_resumes_to_that_interrupt(
    alice: httpx.AsyncClient,
):
    """Run 1 asks for an approval; the client lost its stream after the call, and run 2
    answered it since. Run 1 again with its last event id: the rest of run 1 only, up
    to the interrupt it ended with, not run 2's outcome."""
    thread = await new_session(alice, "billing")
    body = run_input(thread, [user("pay acme")])
    seen: list[tuple[int | None, Any]] = []
    async with alice.stream("POST", "/v1/agui/billing", json=body) as response:
        async for event_id, event in frames(response):
            seen.append((event_id, event))
    (interrupt,) = seen[-1][1].outcome.interrupts
    resume = [{"interruptId": interrupt.id, "status": "resolved", "payload": True}]
    paid = await run(
        alice, "billing", run_input(thread, messages_of(body, [e for _, e in seen]), resume=resume)
    )
    assert paid[-1].result == "Paid 500 euros to acme."

    first_id = seen[0][0]  # RUN_STARTED's: the client got nothing after it
    headers = {"Last-Event-ID": str(first_id)}
    async with alice.stream("POST", "/v1/agui/billing", json=body, headers=headers) as response:
        again = [event async for _, event in frames(response)]
    check_order(again, body)
    assert [e.tool_call_name for e in again if e.type == EventType.TOOL_CALL_START] == ["pay"]
    finished = again[-1]
    assert isinstance(finished.outcome, RunFinishedInterruptOutcome)
    assert [i.id for i in finished.outcome.interrupts] == [interrupt.id]
    assert [m["role"] for m in messages_of(body, again)] == ["user", "assistant"]
    assert not [e for e in again if e.type == EventType.TOOL_CALL_RESULT]


def parsed(text: str) -> list[Any]:
    """The AG-UI events of a whole SSE response."""
    return [
        EVENTS.validate_json(line.removeprefix("data: "))
        for line in text.splitlines()
        if line.startswith("data: ")
    ]


async def test_a_response_carries_what_the_client_lacks_not_the_thread(
    alice: httpx.AsyncClient,
):
    """At 500 messages of 2 KB, a run's response is a few hundred bytes: RUN_STARTED
    does not echo the input, and there is no MESSAGES_SNAPSHOT where what the client
    sent and what it got make the thread (a reply that was not streamed comes as its
    text message). A client that is behind gets the snapshot, the thread whole."""
    thread = f"agui-{uuid.uuid4().hex[:8]}"
    await run(alice, "seeder", run_input(thread, [user("seed 250")]))
    held = (await alice.get(f"/v1/sessions/{thread}/thread")).json()["messages"]
    assert len(held) == 502
    sent = [{"id": m["id"], "role": m["role"], "content": m["content"]} for m in held]

    body = run_input(thread, [*sent, user("hello")])
    response = await alice.post("/v1/agui/seeder", json=body)
    events = parsed(response.text)
    check_order(events, body)
    assert len(response.content) < 2_000, f"{len(response.content):,} bytes"
    assert not [e for e in events if isinstance(e, MessagesSnapshotEvent)]
    thread_now = (await alice.get(f"/v1/sessions/{thread}/thread")).json()["messages"]
    assert [(m["id"], m.get("content")) for m in messages_of(body, events)] == [
        (m["id"], m["content"]) for m in thread_now
    ]

    typed = [m for m in sent if m["role"] == "user"]  # a tab that kept only what was typed
    body = run_input(thread, [*typed, *thread_now[-2:-1], user("again")])
    events = parsed((await alice.post("/v1/agui/seeder", json=body)).text)
    (snapshot,) = [e for e in events if isinstance(e, MessagesSnapshotEvent)]
    thread_now = (await alice.get(f"/v1/sessions/{thread}/thread")).json()["messages"]
    assert [m.id for m in snapshot.messages] == [m["id"] for m in thread_now]
    assert [m["id"] for m in messages_of(body, events)] == [m["id"] for m in thread_now]


async def answer_input(http: httpx.AsyncClient, thread: str) -> dict[str, Any]:
    """The thread as the session holds it, plus one message, as a client sends it."""
    held = (await http.get(f"/v1/sessions/{thread}/thread")).json()["messages"]
    sent = [{"id": m["id"], "role": m["role"], "content": m["content"]} for m in held]
    return run_input(thread, [*sent, user("hello")])


async def test_a_2000_message_history_is_answered_as_a_short_one_is(alice: httpx.AsyncClient):
    """A POST carrying 2,000 messages of 2 KB (about 4 MB) to a session that holds
    them is answered with what a POST carrying two gets: the new messages only, none
    of the history again, and the session takes the one new message. How long it
    takes beside a short one is measured by ``bench/agui_long.py``."""
    long, short = f"agui-{uuid.uuid4().hex[:8]}", f"agui-{uuid.uuid4().hex[:8]}"
    for n in range(4):
        held = (await alice.get(f"/v1/sessions/{long}/thread")).json() if n else {}
        sent = [
            {"id": m["id"], "role": m["role"], "content": m["content"]}
            for m in held.get("messages", [])
        ]
        await run(alice, "seeder", run_input(long, [*sent, user("seed 250")]))
    await run(alice, "seeder", run_input(short, [user("hi")]))
    sizes, grew = {}, {}
    for thread in (long, short):
        body = await answer_input(alice, thread)
        assert len(body["messages"]) > (2_000 if thread == long else 2)
        response = await alice.post("/v1/agui/seeder", json=body)
        events = parsed(response.text)
        check_order(events, body)
        assert not [e for e in events if isinstance(e, MessagesSnapshotEvent)]
        sizes[thread] = len(response.content)
        held = (await alice.get(f"/v1/sessions/{thread}/thread")).json()["messages"]
        grew[thread] = len(held) - (len(body["messages"]) - 1)
    assert sizes[long] <= sizes[short] + 64, sizes  # ids of a run and a message differ
    assert grew == {long: 2, short: 2}  # the new message and its answer, nothing again


async def test_a_last_event_id_on_a_thread_that_does_not_exist_is_a_404_and_starts_nothing(
    alice: httpx.AsyncClient,
):
    """A reload that re-attaches (Last-Event-ID) to a thread that was never started,
    or was deleted, has no run to follow: it is told so at once, rather than kept
    waiting on a session started for it that never gets the message."""
    thread = f"agui-{uuid.uuid4().hex[:8]}"
    body = run_input(thread, [user("hello")])
    refused = await alice.post("/v1/agui/writer", json=body, headers={"Last-Event-ID": "3"})
    assert "Send without it" in problem_of(refused, 404, "SessionNotFoundError")["detail"]
    assert (await alice.get(f"/v1/sessions/{thread}")).status_code == 404
    answered = await run(alice, "writer", body)  # sent again without it: the thread starts
    assert answered[-1].type == EventType.RUN_FINISHED
