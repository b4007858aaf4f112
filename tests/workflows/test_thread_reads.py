"""Reading a session's thread: a closed workflow run's part is read from its history
(a query to a closed run makes a worker replay it), whole or a page at a time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest
from temporalio.client import Client, Interceptor, OutboundInterceptor, QueryWorkflowInput

from ratchet.activities._log_cache import ThreadCache
from ratchet.agents import (
    Agent,
    Result,
    RunContext,
    ScriptedModel,
    Thread,
    ToolCallingAgent,
    ask_user,
    tool,
)
from ratchet.agents._compaction import Summarize, SummarizingAgent
from ratchet.client import AgentClient, SessionHandle
from ratchet.devserver import DevServer
from ratchet.errors import InvalidInputError, RunFailedError, UsageError
from ratchet.payloads import EncryptionCodec
from ratchet.types import Message, ThreadData
from ratchet.wire import RunOptions, SessionOptions
from ratchet.wire._names import THREAD_QUERY
from ratchet.wire._session_data import LogInfo, batch_key, ids_digest
from ratchet.wire._turn_data import ThreadPage, ThreadPageRequest
from ratchet.worker import build_worker
from ratchet.workflows._log_index import INLINE_MAX_BYTES, LogIndexer

USER, ANSWER, TOOL = "u" * 290, "a" * 1500, "t" * 1000


class Talker(Agent):
    """A realistic session's shape: the user writes ~300 characters, the answer is
    ~1,500, and every third send calls a tool whose result is ~1,000."""

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        number = int(messages[-1].text.split()[0])
        if number % 3 == 0:
            call = Message.model_validate(
                {
                    "role": "assistant",
                    "tool_calls": [{"id": f"c{number}", "name": "lookup", "arguments": "{}"}],
                }
            )
            result = Message.tool(call.tool_calls[0], TOOL)
            await thread.on_new_messages([call, result])
        return Result(final_response=Message.assistant(f"{number} {ANSWER}"))


async def talked(client: AgentClient, options: SessionOptions, sends: int) -> SessionHandle:
    """A ``Talker`` session after ``sends`` sends."""
    session = await client.start_session("talker", options=options)
    for n in range(1, sends + 1):
        await session.send(f"{n} {USER}")
    return session


class Queries(Interceptor):
    """Counts the queries a client sends, by workflow run (``None``: the latest)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str | None, str]] = []

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        queries = self

        class Counting(OutboundInterceptor):
            async def query_workflow(self, input: QueryWorkflowInput) -> Any:
                queries.sent.append((input.id, input.run_id, input.query))
                return await super().query_workflow(input)

        return Counting(next)


def counted(client: AgentClient) -> tuple[AgentClient, Queries]:
    """A client like ``client`` (a cache of its own) that counts its queries."""
    queries = Queries()
    temporal = Client(**{**client.temporal.config(), "interceptors": [queries]})
    return AgentClient(temporal, task_queue=client.task_queue), queries


async def workflow_runs(client: AgentClient, session: SessionHandle) -> list[str]:
    """The session's workflow runs, first to last (following continue-as-new)."""
    runs, run_id = [], session.first_temporal_run_id
    while run_id:
        runs.append(run_id)
        handle = client.temporal.get_workflow_handle(session.id, run_id=run_id)
        last = [e async for e in handle.fetch_history_events()][-1]
        continued = last.workflow_execution_continued_as_new_event_attributes
        run_id = continued.new_execution_run_id or None
    return runs


def asked_runs(queries: Queries, runs: Sequence[str]) -> list[str | None]:
    """The workflow runs among ``runs`` that were queried by id."""
    return [run for _, run, _ in queries.sent if run in runs]


async def by_query(client: AgentClient, session_id: str, thread_id: str, end: int) -> list[Message]:
    """The log as the workflow runs holding it answer for it by query (a closed run
    by a replay): what a reading from history must equal."""

    async def held(workflow: str, run: str | None, key: str, start: int, end: int) -> list[Message]:
        handle = client.temporal.get_workflow_handle(workflow, run_id=run)
        messages: list[Message] = []
        while start < end:
            request = ThreadPageRequest(thread_id=key, start=start, end=end)
            page = await handle.query(THREAD_QUERY, request, result_type=ThreadPage)
            base = page.base
            if base is not None and start < base.version:
                upto = min(end, base.version)
                earlier = base.thread_id or key  # a fork's base is its source's log
                messages += await held(base.workflow_id, base.run_id, earlier, start, upto)
                start = upto
                continue
            messages += page.messages
            start = page.next
        return messages

    return await held(session_id, None, thread_id, 0, end)


async def test_a_500_send_session_reads_whole_and_by_pages_without_replaying_closed_runs(
    agent_client: AgentClient,
):
    options = SessionOptions(continue_as_new_after_runs=100)
    async with build_worker(agent_client, {"talker": Talker}):
        session = await talked(agent_client, options, 500)
        runs = await workflow_runs(agent_client, session)
        # Each read by a client of its own, which has read none of the thread yet.
        reader, queries = counted(agent_client)
        started = time.perf_counter()
        thread = await reader.get_session(session.id).thread()
        whole = time.perf_counter() - started
        paging, paging_queries = counted(agent_client)
        started = time.perf_counter()
        paged = [m async for m in paging.get_session(session.id).messages(page=50)]
        by_pages = time.perf_counter() - started
        fresh, fresh_queries = counted(agent_client)
        pages: list[Message] = []
        while len(pages) < len(thread.messages):
            part = await fresh.get_session(session.id).thread(after=len(pages), limit=50)
            assert part.offset == len(pages)
            pages += part.messages

    assert len(runs) == 6  # five closed workflow runs of ~1,200 events each, and the open one
    users = [m.text for m in thread.messages if m.role == "user"]
    assert [int(u.split()[0]) for u in users] == list(range(1, 501))
    assert len(thread.messages) == 500 * 2 + 166 * 2
    assert sum(len(m.text) for m in thread.messages) > 1_000_000
    assert paged == thread.messages and pages == thread.messages
    # No closed run was asked (each answer would replay it); the open one answered.
    assert asked_runs(queries, runs[:-1]) == []
    assert asked_runs(paging_queries, runs[:-1]) == []
    # Pages before the open run's own messages are read without asking it either: its
    # log_info, and a query for each of its ~6 pages (27 pages in all).
    assert len(paging_queries.sent) <= 10
    assert asked_runs(fresh_queries, runs[:-1]) == []
    assert {run for _, run, _ in queries.sent} <= {None, runs[-1]}
    # The issue asks for 1 s: 0.5 s here idle, 0.9 s with the machine's load at 10; the
    # code before took 9-13 s (each closed run replayed by a worker to answer queries).
    # Generous, for a loaded CI machine: bench/sessions.py measures it.
    print(f"500 sends: whole thread in {whole:.2f} s, page by page in {by_pages:.2f} s")
    assert whole < 5 and by_pages < 5


@tool
async def lookup(name: str) -> str:
    """Look up an account."""
    return f"{name}: IBAN NL00"


def everything_agent(blocked: asyncio.Event) -> ToolCallingAgent:
    """Approvals, questions, failures, in-turn tools and a turn that blocks until a
    newer message interrupts it, chosen by the last user message."""

    @tool(requires_approval=True)
    async def pay(to: str, amount: int) -> str:
        """Pay ``amount`` euros to ``to``."""
        return f"paid {amount} to {to}"

    @tool
    async def wait() -> str:
        """Waits until the run is stopped."""
        blocked.set()
        await asyncio.Event().wait()
        return "never"

    def script(messages: Sequence[Message], context: RunContext) -> Message | str:
        last = messages[-1]
        if last.role == "tool":
            if last.text == "x: IBAN NL00":
                raise UsageError("asked to fail")
            return f"after {last.text[:40]}"
        prompt = last.text
        if prompt.startswith("pay "):
            return ScriptedModel.call("pay", to=prompt[4:], amount=500)
        if prompt == "ask":
            return ScriptedModel.call("ask_user", question="Which currency?")
        if prompt == "fail":
            return ScriptedModel.call("lookup", name="x")
        if prompt == "block":
            return ScriptedModel.call("wait")
        return f"re {prompt} " + "." * 200

    return ToolCallingAgent(ScriptedModel(script), [pay, lookup, wait, ask_user])


async def test_closed_runs_read_from_history_equal_their_answers_with_encryption_approvals_failures_interruptions_compaction_and_forks(  # noqa: E501
    temporal_server: DevServer, task_queue: str
):
    codec = EncryptionCodec({"k1": bytes(range(32))})
    client = await AgentClient.connect(temporal_server.address, task_queue=task_queue, codec=codec)
    blocked = asyncio.Event()
    summariser = SummarizingAgent(ScriptedModel(lambda messages, context: "gist"))
    options = SessionOptions(
        steering="interrupt",
        continue_as_new_after_runs=2,
        compaction=Summarize(max_messages=8, keep_turns=1),
    )
    async with build_worker(client, {"all": everything_agent(blocked), "summarizer": summariser}):
        session = await client.start_session("all", options=options)
        await session.send("hello")
        paying = asyncio.ensure_future(session.send("pay acme"))
        (approval,) = await session.wait_for_pending()
        await session.approve(approval.action.id)
        await paying
        paying = asyncio.ensure_future(session.send("pay bob"))
        (approval,) = await session.wait_for_pending()
        await session.reject(approval.action.id, "unknown payee")
        await paying
        asking = asyncio.ensure_future(session.send("ask"))
        (question,) = await session.wait_for_pending()
        await session.provide_input(question.action.id, "EUR")
        await asking
        with pytest.raises(RunFailedError, match="asked to fail"):
            await session.send("fail")
        blocking = asyncio.ensure_future(session.send("block"))
        await blocked.wait()
        await session.send("go on")  # interrupts the blocked turn, which is discarded
        assert (await blocking).status == "INTERRUPTED"
        paying = asyncio.ensure_future(session.send("pay carol"))
        await session.wait_for_pending()
        await session.send("never mind")  # stops the run that waits for the approval
        await paying
        for n in range(4):
            await session.send(f"more {n}")
        fork = await client.fork(session.id, at_turn=3)  # at a turn of a closed run
        await fork.send("forked")
        await session.close()
        runs = await workflow_runs(client, session)
        fork_runs = await workflow_runs(client, fork)
        reader, queries = counted(client)
        thread = await reader.get_session(session.id).thread()
        forked = await reader.get_session(fork.id).thread()
        truth = await by_query(client, session.id, thread.id, len(thread.messages))
        fork_truth = await by_query(client, fork.id, forked.id, len(forked.messages))

    assert len(runs) >= 5 and len(fork_runs) == 1
    # Only the fork's open run was asked: the session and the fork's base are closed.
    assert {(workflow, run) for workflow, run, _ in queries.sent} == {(fork.id, None)}
    assert thread.messages == truth
    assert forked.messages == fork_truth
    texts = [m.text for m in truth]
    assert "paid 500 to acme" in texts  # a tool activity's result, by reference
    assert any("rejected this call: unknown payee" in t for t in texts)  # made by the workflow
    assert "EUR" in texts and "x: IBAN NL00" in texts  # an answer; a failed run's tool result
    assert any(t.startswith("[Summary") for t in texts)  # compaction's note
    assert "the run was stopped before anyone decided" in " ".join(texts)
    assert thread.view == (await client.get_session(session.id).thread()).view


async def test_a_fast_mode_session_reads_its_closed_runs_from_local_activity_markers(
    agent_client: AgentClient,
):
    options = SessionOptions(run=RunOptions(fast=True), continue_as_new_after_runs=2)
    async with build_worker(agent_client, {"talker": Talker}):
        session = await talked(agent_client, options, 7)
        runs = await workflow_runs(agent_client, session)
        reader, queries = counted(agent_client)
        thread = await reader.get_session(session.id).thread()
        truth = await by_query(agent_client, session.id, thread.id, len(thread.messages))
    assert len(runs) == 4
    assert thread.messages == truth
    assert asked_runs(queries, runs[:-1]) == []


async def test_parts_of_a_thread_by_position(agent_client: AgentClient):
    options = SessionOptions(continue_as_new_after_runs=2)
    async with build_worker(agent_client, {"talker": Talker}):
        session = await talked(agent_client, options, 6)
        whole = await session.thread()
        latest = await session.thread(last=3)
        middle = await session.thread(after=4, limit=5)
        past_the_end = await session.thread(after=100)
        length = (await session.thread(last=0)).offset
        tail = [m async for m in session.messages(after=10, page=2)]
        with pytest.raises(InvalidInputError, match="not both"):
            await session.thread(after=1, last=1)
        with pytest.raises(InvalidInputError, match="limit must be 0 or more; got -1"):
            await session.thread(limit=-1)
        with pytest.raises(InvalidInputError, match="page must be 1 or more"):
            [m async for m in session.messages(page=0)]

    assert whole.offset == 0 and whole.base is None and length == len(whole.messages) == 16
    assert latest.messages == whole.messages[-3:] and latest.offset == 13
    assert latest.base is not None and latest.base.last_id == whole.messages[12].id
    assert middle.messages == whole.messages[4:9] and middle.offset == 4
    assert past_the_end.messages == [] and past_the_end.offset == 16
    assert tail == whole.messages[10:]
    assert latest.view == whole.view


class Counter(Agent):
    """Answers with how many messages of the thread it was shown."""

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        return Result(final_response=Message.assistant(f"saw {len(thread.messages)}"))


async def test_a_fresh_worker_pages_a_long_log_in_from_closed_runs_histories(
    agent_client: AgentClient,
):
    # A turn that stalls paging in (asking an open run for its close event waits
    # for it to close) times out and fails the send.
    run = RunOptions(turn_timeout=timedelta(seconds=10), max_attempts=1)
    options = SessionOptions(continue_as_new_after_runs=2, run=run)
    async with build_worker(agent_client, {"counter": Counter}):
        session = await agent_client.start_session("counter", options=options)
        for n in range(7):
            await session.send(f"m{n}")
    cache = ThreadCache()
    async with build_worker(agent_client, {"counter": Counter}, thread_cache=cache):
        result = await session.send("m7")  # this worker has seen nothing of the log
        runs = await workflow_runs(agent_client, session)
    assert result.output == "saw 15"
    assert len(runs) == 5  # m7 ran in the fourth, which then continued as new
    # The open run answered by query; the three closed ones were read from their histories.
    assert cache.stats.histories == 3 and cache.stats.pages >= 1


def test_an_index_names_the_batches_history_holds_and_holds_the_rest_whole():
    indexer = LogIndexer(start=10)
    send = [Message(role="user", content="a", id="u1"), Message(role="user", content="b", id="u2")]
    output = [Message(role="assistant", content="c", id="a1")]
    made = Message(role="tool", content="rejected", tool_call_id="c1", id="w1")
    indexer.held(send)
    indexer.held(output)
    indexer.appended(send)
    indexer.appended([*output, made])
    indexer.appended(send[:1])  # part of a batch is not that batch
    indexer.appended(output)
    thread = ThreadData(id="t", messages=[*send, *output, made, send[0], *output])
    index = indexer.index(thread, LogInfo(thread_id="t", length=16))
    assert index is not None
    assert index.start == 10 and index.digest == ids_digest(thread.messages)
    assert index.entries == [batch_key("u2") + batch_key("a1"), made, send[0], batch_key("a1")]

    indexer.appended([Message(role="user", content="x" * INLINE_MAX_BYTES, id="big")])
    assert indexer.index(thread, LogInfo(thread_id="t", length=17)) is None  # read by query
