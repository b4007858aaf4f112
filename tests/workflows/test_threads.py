"""Threads by reference: linear history, worker caches, paging from the workflow."""

from __future__ import annotations

import json
import random
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType

from ratchet.activities._log_cache import ThreadCache
from ratchet.agents import ScriptedModel, ToolCallingAgent, tool
from ratchet.client import AgentClient, RunHandle
from ratchet.errors import RunFailedError
from ratchet.types import Message, Span, ThreadData, approximate_size, id_tag
from ratchet.wire import RunOptions
from ratchet.worker import build_worker

from ..history import attempts, events, of_type


def pager(steps: int, size: int = 2000, seen: list[int] | None = None) -> ToolCallingAgent:
    """Calls ``fetch`` ``steps`` times (each result marked ``<page-i>``), then answers."""

    @tool
    def fetch(page: int) -> str:
        """Fetch a page."""
        return f"<page-{page}>" + "x" * size

    def reply(messages: list[Message], context) -> Message | str:
        if seen is not None:
            seen.append(len(messages))
        done = sum(m.role == "assistant" for m in messages)
        return ScriptedModel.call("fetch", page=done) if done < steps else "done"

    return ToolCallingAgent(ScriptedModel(reply), [fetch])


async def raw_history(handle: RunHandle) -> bytes:
    return b"".join(e.SerializeToString() for e in await events(handle))


async def history_size(handle: RunHandle) -> int:
    info = (await handle.workflow.describe()).raw_description.workflow_execution_info
    return info.history_size_bytes


async def turn_inputs(handle: RunHandle) -> list[dict]:
    scheduled = of_type(await events(handle), EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    return [
        json.loads(e.activity_task_scheduled_event_attributes.input.payloads[0].data)
        for e in scheduled
    ]


async def run_pager(client: AgentClient, steps: int, **options) -> RunHandle:
    handle = await client.start_run(
        "pager", "go", options=RunOptions(max_turns=steps + 2, **options)
    )
    assert (await handle.result()).output == "done"
    return handle


async def test_history_grows_linearly_and_each_message_is_written_once(
    agent_client: AgentClient,
):
    async with build_worker(agent_client, {"pager": lambda: pager(40)}):
        long = await run_pager(agent_client, 40)
        messages = (await long.record()).session.thread.messages
    async with build_worker(agent_client, {"pager": lambda: pager(20)}):
        short = await run_pager(agent_client, 20)

    assert await history_size(long) <= 2.2 * await history_size(short)
    raw = await raw_history(long)
    assert [raw.count(f"<page-{i}>".encode()) for i in range(40)] == [1] * 40
    message_bytes = sum(len(m.model_dump_json()) for m in messages)
    assert await history_size(long) <= 1.6 * message_bytes


async def test_a_worker_without_the_thread_pages_it_in_from_the_workflow(
    agent_client: AgentClient,
):
    seen: list[int] = []
    # Nothing fits in this cache, and pages are tiny: every turn pages the thread in.
    cache = ThreadCache(max_bytes=0, page_bytes=3000)
    async with build_worker(
        agent_client, {"pager": lambda: pager(6, seen=seen)}, thread_cache=cache
    ):
        await run_pager(agent_client, 6)

    assert seen == [1, 3, 5, 7, 9, 11, 13]
    assert cache.stats.hits == 0
    assert cache.stats.misses == 6  # turn 1's only message was handed over in-process
    assert cache.stats.pages > cache.stats.misses


async def test_a_cached_thread_is_used_and_evicted_by_size(agent_client: AgentClient):
    cache = ThreadCache()
    async with build_worker(agent_client, {"pager": lambda: pager(5)}, thread_cache=cache):
        await run_pager(agent_client, 5)
        assert (cache.stats.hits, cache.stats.misses) == (5, 0)
        one_run = cache.size_bytes
        cache.max_bytes = int(one_run * 1.5)
        await run_pager(agent_client, 5)

    assert len(cache) == 1 and cache.stats.evictions == 1
    assert cache.stats.misses == 0


def test_a_cached_log_trusts_a_turns_own_result_only_once_a_later_turn_names_it():
    messages = [Message.user(f"m{i}") for i in range(4)]
    for i, m in enumerate(messages):
        m.id = f"id{i}"
    log = ThreadCache().log("t")
    log.put(0, messages[:2])
    log.put(2, messages[2:], provisional=True)  # a turn's result, before it is committed

    assert log.has(0, 2) and not log.has(2, 4)
    assert log.confirm(3, id_tag("id3")) and log.has(0, 4)  # a later turn names its last message
    other = ThreadCache().log("t")
    other.put(2, messages[2:], provisional=True)
    # The workflow committed another attempt's result there: the cache must start over.
    assert not other.confirm(3, id_tag("elsewhere")) and not other.has(2, 4)


def test_approximate_size_is_close_to_the_json_size():
    for message in conversation_sample():
        assert abs(approximate_size(message) - len(message.model_dump_json())) < 80


def conversation_sample() -> list[Message]:
    call = ScriptedModel.call("fetch", page=3).tool_calls[0].model_copy(update={"id": "call_1"})
    return [
        Message(role="user", content="Read the pages.", id="msg_1"),
        Message.assistant(tool_calls=[call]).model_copy(update={"id": "msg_2"}),
        Message.tool(call, "x" * 2000).model_copy(update={"id": "msg_3"}),
        Message(role="assistant", content="done", id="msg_4"),
    ]


def test_cache_evicts_least_recently_used_first():
    def thread(tag: str) -> list[Message]:
        return [Message(role="user", content=tag * 100, id=f"{tag}{i}") for i in range(3)]

    a, b, c = thread("a"), thread("b"), thread("c")
    size = sum(approximate_size(m) for m in a)
    cache = ThreadCache(max_bytes=2 * size)
    for name, messages in (("a", a), ("b", b)):
        cache.log_changed(name, cache.log(name).put(0, messages))
    assert cache.log("a").has(0, 3)  # a is now recent
    cache.log_changed("c", cache.log("c").put(0, c))

    assert not cache.log("b").has(0, 3)
    assert cache.log("a").has(0, 3) and cache.log("c").has(0, 3)
    assert cache.size_bytes == 2 * size and cache.stats.evictions == 1


async def test_a_run_continues_as_new_with_its_thread_by_reference(agent_client: AgentClient):
    async with build_worker(agent_client, {"pager": lambda: pager(6)}):
        handle = await run_pager(agent_client, 6, continue_as_new_after_turns=2)
        thread = await handle.thread()
        latest = (await handle.record()).session.thread

    assert [m.text[:8] for m in thread.messages if m.role == "tool"] == [
        f"<page-{i}>" for i in range(6)
    ]
    assert len(thread.messages) == 14 and thread.messages[0].text == "go"
    # The latest workflow run holds only what it added; the rest is named by reference.
    assert latest.base is not None and len(latest.messages) < 14
    started = (await events(handle))[0].workflow_execution_started_event_attributes
    assert b"<page-" not in started.input.payloads[0].data  # no thread was carried


async def test_an_oversized_tool_result_fails_the_run_once_with_a_clear_error(
    agent_client: AgentClient,
):
    big = pager(1, size=2_200_000)
    async with build_worker(agent_client, {"pager": lambda: big}):
        handle = await agent_client.start_run(
            "pager", "go", options=RunOptions(initial_retry_interval=timedelta(milliseconds=50))
        )
        with pytest.raises(RunFailedError) as failure:
            await handle.result()

    assert failure.value.error_type == "PayloadTooLargeError"
    assert "over Temporal's 2.0 MB payload limit" in str(failure.value)
    assert "the result of tool 'fetch'" in str(failure.value)
    assert "payload_storage" in str(failure.value)
    assert await attempts(handle) == [1]


async def test_external_payload_storage_carries_an_oversized_tool_result(
    temporal_server, task_queue: str, tmp_path: Path
):
    client = await AgentClient.connect(
        temporal_server.address, task_queue=task_queue, payload_storage=tmp_path / "payloads"
    )
    big = pager(1, size=2_200_000)
    async with build_worker(client, {"pager": lambda: big}):
        handle = await run_pager(client, 1)
        thread = (await handle.record()).session.thread

    assert len(thread.messages[2].content or "") > 2_200_000
    assert await history_size(handle) < 20_000
    assert len(list((tmp_path / "payloads").rglob("*"))) > 0


async def test_fast_mode_runs_turns_as_local_activities_with_linear_history(
    agent_client: AgentClient,
):
    async with build_worker(agent_client, {"pager": lambda: pager(20)}):
        handle = await run_pager(agent_client, 20, fast=True)

    history = await events(handle)
    assert of_type(history, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) == []
    assert len(of_type(history, EventType.EVENT_TYPE_MARKER_RECORDED)) >= 21
    # The thread goes inline, but a local activity's input is never written to history.
    raw = await raw_history(handle)
    assert [raw.count(f"<page-{i}>".encode()) for i in range(20)] == [1] * 20


async def test_fast_mode_on_a_worker_without_the_thread_takes_the_turn_again_as_an_activity(
    agent_client: AgentClient,
):
    seen: list[int] = []
    cache = ThreadCache(max_bytes=0)  # holds nothing: every turn misses
    agents = {"pager": lambda: pager(4, seen=seen)}
    async with build_worker(agent_client, agents, thread_cache=cache):
        handle = await run_pager(agent_client, 4, fast=True)

    assert seen == [1, 3, 5, 7, 9]
    # Turn 1 had its one message inline; each later one paged the log in, as an activity.
    scheduled = of_type(await events(handle), EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    assert len(scheduled) == 4 and cache.stats.pages >= 4


def test_a_message_and_a_view_are_written_without_their_defaults():
    # Every turn's input and output carry them into history: "tool_calls":[] and
    # "parts":[] on each message, or a view's spans as objects, are pure overhead.
    written = [json.loads(m.model_dump_json()) for m in conversation_sample()]
    assert written[0] == {"role": "user", "content": "Read the pages.", "id": "msg_1"}
    assert "tool_calls" in written[1] and "parts" not in written[1]
    view = [Span(start=0, end=1), Span(start=688, end=689, drop=True), Span(start=700)]
    data = ThreadData(id="t", messages=[], view=view)
    assert json.loads(data.model_dump_json())["view"] == "0-1,688-689!,700-"
    assert ThreadData.model_validate_json(data.model_dump_json()) == data
    # A fitted view drops a tool result every few turns: a range names its drops.
    fitted = [Span(start=0, end=1), Span(start=186, end=190)]
    for at in range(190, 270, 8):
        fitted += [Span(start=at, end=at + 1, drop=True), Span(start=at + 1, end=at + 8)]
    fitted[-1] = Span(start=fitted[-1].start)
    data = ThreadData(id="t", messages=[], view=fitted)
    assert json.loads(data.model_dump_json())["view"] == "0-1,186-," + ",".join(
        f"!{at}" for at in range(190, 270, 8)
    )
    assert ThreadData.model_validate_json(data.model_dump_json()) == data
    assert ThreadData.model_validate({"id": "t", "view": [{"start": 3, "drop": True}]}).view == [
        Span(start=3, drop=True)
    ]


def test_any_view_reads_back_as_it_was_written():
    # The one-string form merges ranges around their drops; reading splits them again.
    rng = random.Random(29)
    for _ in range(3000):
        spans, at = [], rng.randint(0, 3)
        for _ in range(rng.randint(0, 8)):
            at += rng.randint(0, 2)
            length = rng.randint(1, 3)
            spans.append(Span(start=at, end=at + length, drop=rng.random() < 0.4))
            at += length
        if spans and rng.random() < 0.5:
            spans[-1] = Span(start=spans[-1].start, drop=spans[-1].drop)  # open to the end
        data = ThreadData(id="t", messages=[], view=spans)
        assert ThreadData.model_validate_json(data.model_dump_json()).view == spans, spans
