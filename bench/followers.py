"""Followers across continue-as-new: how late a live reader sees a run's end, and
what a reader that fell behind gets.

    python -m bench.followers [--out results/followers.json]

Workload: a session that continues as new after every message (``continue_as_new_
after_runs=1``); each message's one turn emits ``EMITS`` custom events, the last
stamped with the activity's clock, then answers. ``MESSAGES`` messages are sent one
after another while ``session.events()`` follows live. Reported: the delay from the
turn's last emit to the follower receiving the run's ``run_finished`` (the event the
workflow publishes in the task that continues as new), median, p95 and worst. Then
a second follower starts ``BEHIND`` events behind the end (older than the new run
holds): the events it gets, misses or is refused (``EventsExpiredError``), and how
long it takes to read them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import uuid
from contextlib import aclosing
from pathlib import Path

from ratchet.agents import Agent, Result, RunContext, Thread
from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.errors import EventsExpiredError
from ratchet.types import Message
from ratchet.wire import SessionOptions
from ratchet.worker import build_worker

RESULTS = Path(__file__).parent / "results" / "followers.json"
EMITS = 200
MESSAGES = 20
BEHIND = 450


class Streamer(Agent):
    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        for i in range(EMITS):
            await context.emit({"i": i, "sent": time.time()})
        answer = Message.assistant("streamed")
        await thread.on_new_messages([answer])
        return Result(final_response=answer)


async def follow_live(client: AgentClient) -> tuple[list[float], str, int, str | None]:
    session = await client.start_session(
        "streamer", options=SessionOptions(continue_as_new_after_runs=1)
    )
    delays: list[float] = []
    last_sent, error = 0.0, None

    async def follow() -> None:
        nonlocal last_sent, error
        try:
            async for event in session.events():
                if event.kind == "custom":
                    last_sent = event.data["sent"]
                elif event.kind == "run_finished":
                    delays.append(time.time() - last_sent)
        except Exception as e:  # noqa: BLE001 - reported: the follower failed
            error = f"{type(e).__name__}: {e}"

    following = asyncio.ensure_future(follow())
    for _ in range(MESSAGES):
        await session.send("go")
    end = await session.event_offset()
    await session.close()
    await asyncio.wait_for(following, 120)
    return delays, session.id, end, error


async def read_behind(client: AgentClient, session_id: str, end: int) -> dict:
    start = end - BEHIND
    got: list[bool] = []
    began = time.monotonic()
    outcome = "all"
    try:
        events = client.get_session(session_id).events(from_offset=start)
        async with aclosing(events) as reading:
            async for event in reading:
                got.append(event.kind == "custom")
                if len(got) >= BEHIND:
                    break
    except EventsExpiredError:
        outcome = "EventsExpiredError"
    took = time.monotonic() - began
    return {"asked": BEHIND, "got": len(got), "outcome": outcome, "seconds": round(took, 2)}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=RESULTS)
    out = parser.parse_args().out
    with DevServer.start(ui=False) as server:
        base = await AgentClient.connect(server.address)
        client = AgentClient(base.temporal, task_queue=f"bench-{uuid.uuid4().hex[:6]}")
        async with build_worker(client, {"streamer": Streamer()}):
            session_delays, session_id, end, error = await follow_live(client)
            behind = await read_behind(client, session_id, end)
    delays = sorted(session_delays)
    result = {
        "messages": MESSAGES,
        "emits_per_message": EMITS,
        "run_finished_delay_ms": {
            "median": round(1000 * statistics.median(delays)),
            "p95": round(1000 * delays[int(0.95 * (len(delays) - 1))]),
            "max": round(1000 * delays[-1]),
            "received": f"{len(delays)}/{MESSAGES}",
        },
        "follower_error": error,
        "behind": behind,
    }
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
