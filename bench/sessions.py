"""Sessions at length: history per message byte, continue-as-new inputs, queues, latency.

    .venv/bin/python -m bench.sessions [--sends 1000] [--tiny 1000] [--latency 60]

One session, driven through the public API only, with a ToolCallingAgent whose
scripted model writes messages that look real: the user writes ~300 characters,
the answer is ~1,500, and every third send the model first calls a tool, which
runs and returns ~1,000 characters (two turns). The model's context window is
32,000 tokens, so the session fits each prompt to it. No watcher, no streaming.
At checkpoints it reads every workflow run of the session
(``DescribeWorkflowExecution``: history bytes and events; the started event: the
continue-as-new input) and divides their total by the JSON bytes of the thread.
It times reading the thread there, each time with a client that has read none of
it yet: whole (``thread()``), page by page (``messages()``, 500 a page), and only
the latest 50 messages (``thread(last=50)``).

Then: ``--tiny`` one-word sends (bytes and events per send); 150 concurrent
sends to one session (answered in order; the client keeps at most 3 Updates in
flight); and the latency from ``send`` until the scripted model is called,
alternating (ABBA) with a bare workflow that runs one activity per Update.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

from temporalio.worker import Worker

from ratchet.agents import Agent, Result, RunContext, ScriptedModel, Thread, ToolCallingAgent, tool
from ratchet.client import AgentClient, SessionHandle
from ratchet.devserver import DevServer
from ratchet.types import Message, ThreadData
from ratchet.worker import build_worker

from .bare_workflows import CALLED, BareUpdateWorkflow, bare_step

RESULTS = Path(__file__).parent / "results"
USER = "u" * 290
ANSWER = "a" * 1500
TOOL = "t" * 1000


class Tiny(Agent):
    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        return Result(final_response=Message.assistant("ok"))


WINDOW = 32_000
"""The scripted model's context window, in tokens: a session's prompt is fitted to it,
as to a real model's."""


@tool
def lookup() -> str:
    """Look something up (~1,000 characters)."""
    return TOOL


def realistic(called: asyncio.Queue | None = None) -> ToolCallingAgent:
    """A ToolCallingAgent whose scripted model answers each send ("<n> uuu...") with
    "<n> aaa..."; every third send it first calls the ``lookup`` tool, which runs."""

    def reply(messages: Sequence[Message], context: RunContext) -> str | Message:
        if called is not None and messages[-1].role == "user":
            called.put_nowait(time.perf_counter())
        last_user = next(m for m in reversed(messages) if m.role == "user")
        number = last_user.text.split()[0]  # "t7": a latency round's send
        if messages[-1].role == "user" and number.isdigit() and int(number) % 3 == 0:
            return ScriptedModel.call("lookup")
        return f"{number} {ANSWER}"

    return ToolCallingAgent(ScriptedModel(reply, context_window=WINDOW), [lookup])


async def session_history(client: AgentClient, session_id: str) -> dict:
    """Every workflow run of the session: history bytes and events, input sizes."""
    temporal = client.temporal
    runs, total_bytes, total_events, inputs, lengths = 0, 0, 0, [], []
    async for info in temporal.list_workflows(f"WorkflowId = '{session_id}'"):
        described = await temporal.get_workflow_handle(session_id, run_id=info.run_id).describe()
        raw = described.raw_description.workflow_execution_info
        runs += 1
        total_bytes += raw.history_size_bytes
        total_events += raw.history_length
        lengths.append(raw.history_length)
        handle = temporal.get_workflow_handle(session_id, run_id=info.run_id)
        async for event in handle.fetch_history_events():
            attributes = event.workflow_execution_started_event_attributes
            inputs.append(sum(p.ByteSize() for p in attributes.input.payloads))
            break
    return {
        "workflow_runs": runs,
        "history_bytes": total_bytes,
        "history_events": total_events,
        "largest_run_input_bytes": max(inputs),
        "largest_run_events": max(lengths),
    }


async def long_session(client: AgentClient, sends: int, checkpoints: list[int]) -> list[dict]:
    session = await client.start_session("real")
    rows = []
    started = time.perf_counter()
    for i in range(1, sends + 1):
        await session.send(f"{i} {USER}")
        if i in checkpoints:
            thread, reads = await timed_reads(client, session.id)
            message_bytes = sum(len(m.model_dump_json()) for m in thread.messages)
            history = await session_history(client, session.id)
            in_order = [int(m.text.split()[0]) for m in thread.messages if m.role == "user"]
            rows.append(
                {
                    "sends": i,
                    "messages": len(thread.messages),
                    "in_order": in_order == list(range(1, i + 1)),
                    "message_bytes": message_bytes,
                    **history,
                    "history_per_message_byte": round(history["history_bytes"] / message_bytes, 3),
                    "fixed_bytes_per_send": round(
                        (history["history_bytes"] - message_bytes) / i, 1
                    ),
                    "events_per_send": round(history["history_events"] / i, 2),
                    **reads,
                    "seconds": round(time.perf_counter() - started, 1),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    return rows


async def timed_reads(client: AgentClient, session_id: str) -> tuple[ThreadData, dict]:
    """The thread, read whole, page by page and only its latest messages, each by a
    client that has read none of it yet (nothing cached), and the seconds each took."""

    def reader() -> SessionHandle:
        return AgentClient(client.temporal, task_queue=client.task_queue).get_session(session_id)

    started = time.perf_counter()
    thread = await reader().thread()
    whole = time.perf_counter() - started
    started = time.perf_counter()
    paged = [m async for m in reader().messages(page=500)]
    pages = time.perf_counter() - started
    started = time.perf_counter()
    latest = await reader().thread(last=50)
    tail = time.perf_counter() - started
    same = paged == thread.messages and latest.messages == thread.messages[-50:]
    return thread, {
        "read_seconds": round(whole, 2),
        "read_by_pages_seconds": round(pages, 2),
        "read_latest_50_seconds": round(tail, 3),
        "reads_agree": same,
    }


async def tiny_session(client: AgentClient, sends: int) -> dict:
    session = await client.start_session("tiny")
    for i in range(sends):
        await session.send(f"hi {i}")
    thread = await session.thread()
    message_bytes = sum(len(m.model_dump_json()) for m in thread.messages)
    history = await session_history(client, session.id)
    return {
        "sends": sends,
        "message_bytes": message_bytes,
        **history,
        "bytes_per_send": round(history["history_bytes"] / sends, 1),
        "fixed_bytes_per_send": round((history["history_bytes"] - message_bytes) / sends, 1),
        "events_per_send": round(history["history_events"] / sends, 2),
    }


async def concurrent_sends(client: AgentClient, count: int) -> dict:
    session = await client.start_session("tiny")
    peak = 0
    slot = client._update_slot(session.id)  # the bench reads its count

    async def watch() -> None:
        nonlocal peak
        while True:
            peak = max(peak, 3 - slot._value)  # Updates this client holds open
            await asyncio.sleep(0.005)

    watcher = asyncio.ensure_future(watch())
    errors: list[str] = []

    async def send(i: int):
        try:
            return await session.send(f"n{i}")
        except Exception as e:  # counted, reported
            errors.append(f"{type(e).__name__}: {e}")

    started = time.perf_counter()
    results = await asyncio.gather(*(send(i) for i in range(count)))
    elapsed = time.perf_counter() - started
    watcher.cancel()
    thread = await session.thread()
    users = [m.text for m in thread.messages if m.role == "user"]
    return {
        "sends": count,
        "answered": sum(r is not None for r in results),
        "errors": errors[:3],
        "all_queued_and_answered_once": sorted(users) == sorted(f"n{i}" for i in range(count)),
        "peak_updates_in_flight_from_client": peak,
        "seconds": round(elapsed, 2),
    }


async def latency(client: AgentClient, called: asyncio.Queue, rounds: int) -> dict:
    session = await client.start_session("timed")
    bare = await client.temporal.start_workflow(
        BareUpdateWorkflow.run, id=f"bare-{time.time_ns()}", task_queue="bare"
    )

    async def ours(i: int) -> float:
        started = time.perf_counter()
        task = asyncio.ensure_future(session.send(f"t{i}"))
        at = await called.get()
        await task
        return at - started

    async def theirs(i: int) -> float:
        started = time.perf_counter()
        task = asyncio.ensure_future(bare.execute_update(BareUpdateWorkflow.send, f"t{i}"))
        at = await called.get()
        await task
        return at - started

    for i in range(10):  # warm-up, not counted
        await ours(i)
        await theirs(i)
    a, b = [], []
    for i in range(rounds):
        first, second = (ours, theirs) if i % 2 == 0 else (theirs, ours)  # ABBA
        x, y = await first(i), await second(i)
        (a if first is ours else b).append(x)
        (b if first is ours else a).append(y)
    described = await bare.describe()
    bare_bytes = described.raw_description.workflow_execution_info.history_size_bytes
    await bare.signal(BareUpdateWorkflow.close)
    return {
        "bare_history_bytes_per_update": round(bare_bytes / (rounds + 10), 1),
        "rounds": rounds,
        "session_send_to_model_ms": round(statistics.median(a) * 1000, 1),
        "bare_update_to_activity_ms": round(statistics.median(b) * 1000, 1),
        "ratio": round(statistics.median(a) / statistics.median(b), 2),
    }


async def main(sends: int, tiny: int, rounds: int, concurrent: int) -> dict:
    checkpoints = sorted({c for c in (100, 1000, 10_000, sends) if c <= sends})
    called: asyncio.Queue = asyncio.Queue()
    CALLED[:] = [called]
    with DevServer.start(ui=False) as server:
        client = await AgentClient.connect(server.address, task_queue="sessions")
        agents = {"real": realistic, "tiny": Tiny, "timed": lambda: realistic(called)}
        async with (
            build_worker(client, agents),
            Worker(
                client.temporal,
                task_queue="bare",
                workflows=[BareUpdateWorkflow],
                activities=[bare_step],
            ),
        ):
            report = {
                "latency": await latency(client, called, rounds),
                "concurrent": await concurrent_sends(client, concurrent),
                "tiny": await tiny_session(client, tiny),
                "realistic": await long_session(client, sends, checkpoints),
            }
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sends", type=int, default=1000)
    parser.add_argument("--tiny", type=int, default=1000)
    parser.add_argument("--latency", type=int, default=60)
    parser.add_argument("--concurrent", type=int, default=150)
    parser.add_argument("--out", default=str(RESULTS / "sessions.json"))
    args = parser.parse_args()
    report = asyncio.run(main(args.sends, args.tiny, args.latency, args.concurrent))
    report["command"] = (
        f"python -m bench.sessions --sends {args.sends} --tiny {args.tiny} "
        f"--latency {args.latency} --concurrent {args.concurrent}"
    )
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
