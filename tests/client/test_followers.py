"""Followers never skip silently: a reader up to 500 events behind gets every event
once, across any number of continues-as-new (the gap is read from the runs before);
further behind it gets ``EventsExpiredError`` at the gap, on any poll. Tool results
reach readers when the turn records them, before the text that follows them."""

from __future__ import annotations

import asyncio
import random
from contextlib import aclosing
from dataclasses import dataclass, field

import pytest

from ratchet.agents import (
    Agent,
    ModelResponse,
    Result,
    RunContext,
    ScriptedModel,
    Thread,
    ToolCallingAgent,
    tool,
)
from ratchet.client import AgentClient
from ratchet.client._event_reader import numbered_events
from ratchet.errors import EventsExpiredError
from ratchet.types import CustomEvent, Message, RunEvent, TextDelta, ToolCall
from ratchet.wire import SessionOptions
from ratchet.worker import build_worker

RETAINED = 500
"""Events behind the end a reader may be and lose none (docs/sessions.md)."""
DELTAS = 200
PAUSES = [1, 2, 5]
TURN_KINDS = ("tool_call", "tool_result", "custom", "text_delta")
REPLY = "x" * 2000
"""A 2 KB reply: the turn's ``turn_completed`` event holds all of it."""


@tool
def lookup(key: str) -> str:
    """Looks ``key`` up."""
    return f"value of {key}"


class Quoting(Agent):
    """Calls a tool, then streams a reply quoting its result, all in one turn: 200
    events (custom ones: streamed text would be joined into a few), then the text."""

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        call = ToolCall(id=f"call-{thread.messages[-1].id}", name="lookup", arguments='{"key":"k"}')

        async def ask() -> ModelResponse:
            return ModelResponse(message=Message.assistant(tool_calls=[call]))

        asked = await context.once("model", ask, ModelResponse, wait=False)
        answer = await context.once(
            f"tool:{call.id}", lambda: lookup.invoke(call, context), Message
        )
        for n in range(DELTAS):
            await context.emit(CustomEvent(data={"delta": n}))
        text = f"{answer.text}: {REPLY}"
        await context.emit(TextDelta(text=text))
        final = Message.assistant(text)
        await thread.on_new_messages([asked.message, answer, final])
        return Result(final_response=final)


@dataclass
class Follower:
    """Reads the session's events and pauses at seeded random points; the sender
    sends while it is paused, then waits for it to catch up. While it reads, the
    sender lets it keep up before each send (a reader slowed by a loaded machine
    falls behind only where it paused)."""

    client: AgentClient
    session_id: str
    rng: random.Random
    seen: list[tuple[int, RunEvent]] = field(default_factory=list)
    restarts: set[int] = field(default_factory=set)
    """Where the reader followed on from after an ``EventsExpiredError``."""
    resumes: list[tuple[int, int, int, str]] = field(default_factory=list)
    """Each pause: where the reader was; how far behind the end it was on resuming,
    at least (from the end when it paused: it may have fetched up to there) and at
    most (from where it was); and what it got ("all", or "expired")."""
    paused: asyncio.Event = field(default_factory=asyncio.Event)
    resume: asyncio.Event = field(default_factory=asyncio.Event)
    caught_up: asyncio.Event = field(default_factory=asyncio.Event)
    moved: asyncio.Event = field(default_factory=asyncio.Event)
    end: int = 0
    offset: int = 0

    async def keep_up(self, end: int) -> None:
        """Returns once the reader has read up to ``end``, or has paused."""
        while self.offset < end and not self.paused.is_set():
            self.moved.clear()
            await self.moved.wait()

    async def follow(self) -> None:
        try:
            await self._follow()
        finally:
            self.moved.set()

    async def _follow(self) -> None:
        offset = 0
        while True:
            events = numbered_events(self.client.temporal, self.session_id, from_offset=offset)
            try:
                async for at, event in events:
                    self.seen.append((at, event))
                    offset = self.offset = at + 1
                    self.moved.set()
                    if offset >= self.end:
                        self.caught_up.set()
                    pause = self.rng.random() < 1 / 150
                    if pause and self.caught_up.is_set():  # not while catching up
                        await self._pause(offset)
                return  # the session closed
            except EventsExpiredError as e:
                where, least, most, _ = self.resumes[-1]
                # At the gap, within what it was behind: the events before it came.
                assert where <= e.requested < self.end, (e.requested, e.oldest, self.resumes)
                assert all(at < e.requested for at, _ in self.seen if at >= where)
                self.resumes[-1] = (where, least, most, "expired")
                session = self.client.get_session(self.session_id)
                offset = self.offset = await session.event_offset()  # a snapshot, then on
                self.restarts.add(offset)
                self.caught_up.set()

    async def _pause(self, offset: int) -> None:
        self.caught_up.clear()
        session = self.client.get_session(self.session_id)
        fetched = await session.event_offset()  # what it may have fetched, at most
        self.paused.set()
        self.moved.set()
        await self.resume.wait()
        self.resume.clear()
        self.paused.clear()
        self.end = await session.event_offset()
        self.resumes.append((offset, self.end - fetched, self.end - offset, "all"))
        if offset >= self.end:
            self.caught_up.set()


async def test_a_follower_pausing_at_random_gets_every_event_once_or_a_gap_error(
    agent_client: AgentClient,
):
    rng = random.Random(28)
    async with build_worker(agent_client, {"quoting": Quoting()}):
        session = await agent_client.start_session(
            "quoting", options=SessionOptions(continue_as_new_after_runs=1)
        )
        follower = Follower(agent_client, session.id, random.Random(3))
        following = asyncio.ensure_future(follower.follow())
        # Messages sent while the follower is paused (the first is the one in flight;
        # each is about 210 events): 1 (up to 210 behind), 2 (210 to 420, across one
        # or two continues-as-new) or 5 (over 840: out of reach, even counting what
        # the reader had fetched before it paused).
        pauses = PAUSES * 3
        rng.shuffle(pauses)
        pause, sent = pauses.pop(), 0
        for _ in range(24):
            if not follower.paused.is_set():
                await asyncio.wait_for(follower.keep_up(await session.event_offset()), 120)
            await session.send("go")
            if follower.paused.is_set() and not follower.resume.is_set():
                sent += 1
                if sent >= pause:
                    pause, sent = pauses.pop() if pauses else 1, 0
                    follower.resume.set()
                    await asyncio.wait_for(follower.caught_up.wait(), 120)
        follower.resume.set()
        await session.close()
        await asyncio.wait_for(following, 120)

    # Every event once, in order, but where the reader was told it fell too far behind.
    offsets = [at for at, _ in follower.seen]
    assert offsets[0] == 0
    for before, after in zip(offsets, offsets[1:], strict=False):
        assert after == before + 1 or after in follower.restarts, (before, after)
    # Within RETAINED of where it was: every event. Further than RETAINED from what it
    # may have fetched before pausing (a poll's batch it had yet to read): the gap
    # error. Between the two, either.
    for _, least, most, outcome in follower.resumes:
        if most <= RETAINED:
            assert outcome == "all", follower.resumes
        if least > RETAINED:
            assert outcome == "expired", follower.resumes
    assert {outcome for *_, outcome in follower.resumes} == {"all", "expired"}
    # Within reach across continues-as-new: the run in progress held a few of them only.
    assert any(b > 300 for _, _, b, outcome in follower.resumes if outcome == "all"), (
        follower.resumes
    )

    # Each turn's tool result came before the text that follows it, each once.
    turns = _turns(follower)
    assert len(turns) >= 10
    for kinds in turns:
        assert kinds == ["tool_call", "tool_result", *["custom"] * DELTAS, "text_delta"]


def _turns(follower: Follower) -> list[list[str]]:
    """The tool, custom and text events of each turn read whole (not cut by a restart)."""
    turns: list[list[str]] = []
    kinds: list[str] | None = None
    for at, event in follower.seen:
        if at in follower.restarts:
            kinds = None
        if event.kind == "turn_started":
            kinds = []
        elif event.kind == "turn_completed" and kinds is not None:
            turns.append(kinds)
            kinds = None
        elif kinds is not None and event.kind in (
            "tool_call",
            "tool_result",
            "custom",
            "text_delta",
        ):
            kinds.append(event.kind)
    return turns


async def test_events_raise_at_the_gap_by_default(agent_client: AgentClient):
    async with build_worker(agent_client, {"quoting": Quoting()}):
        session = await agent_client.start_session(
            "quoting", options=SessionOptions(continue_as_new_after_runs=1)
        )
        for _ in range(4):  # over 800 events: the first ones are out of reach
            await session.send("go")
        end = await session.event_offset()
        assert end > RETAINED + 10
        with pytest.raises(EventsExpiredError) as raised:
            async with asyncio.timeout(60), aclosing(session.events(from_offset=5)) as events:
                async for _ in events:
                    pass
        assert raised.value.requested == 5
        # Within reach, across continues-as-new: every event from there on.
        got = []
        async with aclosing(session.events(from_offset=end - RETAINED)) as events:
            async for event in events:
                got.append(event)
                if len(got) == RETAINED:
                    break
        assert got[-1].kind == "run_finished"
        await session.close()


async def test_a_continue_as_new_input_stays_under_64_kib_with_large_replies(
    agent_client: AgentClient,
):
    """The new run's input carries the latest events within 24 KB, whatever the size of
    the replies (``turn_completed`` holds a whole one), not every event a reader may
    still want: those are read from the run before."""
    big = ToolCallingAgent(ScriptedModel([f"{n}" + "y" * 40_000 for n in range(3)], stream=True))
    async with build_worker(agent_client, {"big": big}):
        session = await agent_client.start_session(
            "big", options=SessionOptions(continue_as_new_after_runs=1)
        )
        for _ in range(3):
            await session.send("go")
        sizes = []
        async for event in session.workflow.fetch_history_events():
            if event.HasField("workflow_execution_started_event_attributes"):
                attributes = event.workflow_execution_started_event_attributes
                sizes.append(sum(p.ByteSize() for p in attributes.input.payloads))
        await session.close()
    assert 0 < sizes[0] <= 64 * 1024, sizes  # the latest run's, continued from the one before
