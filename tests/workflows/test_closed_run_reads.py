"""Reading a session's closed workflow runs needs no worker: their turn marks (for
forks) and events are read from their histories, where each run leaves them as it
ends. Seen before: once the build that ran them had no worker left (a versioned
deploy's old build stopped), forks and event replay of a moved session failed."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import WorkflowHistory
from temporalio.contrib.workflow_streams import (
    PublishEntry,
    PublisherState,
    PublishInput,
    WorkflowStreamState,
)

from ratchet._temporal_internals import decode_stream_payload, stream_item
from ratchet.client import AgentClient, _checkpoints
from ratchet.client._earlier_runs import earlier_events
from ratchet.errors import ClosedRunUnreadableError
from ratchet.history import ClosedRun, checkpoint_answer, closed_run_of, held_events
from ratchet.payloads._converter import data_converter
from ratchet.types import RunEvent
from ratchet.wire import RunOptions, SessionOptions
from ratchet.wire._names import CHECKPOINT_QUERY
from ratchet.wire._run_record import (
    EVENT_BYTES_KEPT,
    EventIndex,
    RunRecord,
    TurnMark,
    compact_marks,
)
from ratchet.wire._session_data import CheckpointRequest, SessionInput
from ratchet.worker import build_worker
from ratchet.workflows._event_index import EventIndexer
from tests.agents.test_compaction import paging_agent
from tests.workflows.test_thread_reads import Talker, counted, workflow_runs

NO_WORKER_WAIT = 20
"""Longest a read may take with no worker: a query no worker answers waits (then
fails with 'no poller seen'), so an answer within this was read from history."""


async def test_fork_checkpoint_and_events_of_closed_runs_need_no_worker(
    agent_client: AgentClient,
):
    options = SessionOptions(continue_as_new_after_runs=1)
    async with build_worker(agent_client, {"talker": Talker}):
        session = await agent_client.start_session("talker", options=options)
        # Every third calls a tool (its result is a turn-end event); the answers are
        # more than a continue-as-new carries, so the earlier runs hold the first.
        for n in range(1, 11):
            await session.send(f"{n} hello")
        end = await session.event_offset()
        seen = await _events(session.events(from_offset=0), end)
        expected = await agent_client.checkpoint(session.id, at_turn=1)
        before = await agent_client.checkpoint(session.id, at_turn=0)  # the first run's
        runs = await workflow_runs(agent_client, session)
    assert len(runs) == 11  # ten closed by continue-as-new, one open (idle)
    assert {e.kind for e in seen} >= {"run_started", "tool_result", "run_finished"}

    # Every worker has stopped. A fresh client (no caches) reads the closed runs.
    fresh, queries = counted(agent_client)
    async with asyncio.timeout(NO_WORKER_WAIT):
        checkpoint = await fresh.checkpoint(session.id, at_turn=1)
        assert await fresh.checkpoint(session.id, at_turn=0) == before
        until = await _first_offset_of_open_run(fresh, session.id)
        items = await earlier_events(fresh.temporal, session.id, "", 0, until)
    assert checkpoint == expected and checkpoint.turn == 1
    assert [m.text for m in checkpoint.messages] == ["1 hello", expected.messages[-1].text]
    assert until > 10 and items is not None and [i.offset for i in items] == list(range(until))
    # Each as the runs published it: turn ends and answers (their texts named by
    # message in the index), tool results, statuses, streamed ones.
    converter = fresh.temporal.data_converter.payload_converter
    event_type: Any = RunEvent  # a discriminated union, which the converter decodes
    rebuilt = [
        converter.from_payload(decode_stream_payload(i.data), event_type).model_copy(
            update={"offset": i.offset}  # the reader numbers each event it yields
        )
        for i in items
    ]
    assert rebuilt == seen[:until]
    assert any(e.kind == "turn_completed" and len(e.text or "") > 1500 for e in rebuilt)
    assert queries.sent == []  # no run was asked, closed or open

    # A worker again (the new build's): a fork runs, and a follower from 0 gets
    # every event, the closed runs' from their histories.
    async with build_worker(agent_client, {"talker": Talker}):
        fork = await fresh.fork(session.id, at_turn=1)
        answer = await fork.send("5 more")
        again = await _events(fresh.get_session(session.id).events(), end)
    assert answer.output.startswith("5 ")
    assert again == seen
    assert not [run for _, run, _ in queries.sent if run in runs[:-1]]  # no closed run


async def _events(stream, end: int) -> list:  # noqa: ANN001
    found = []
    async for event in stream:
        found.append(event)
        if len(found) >= end:
            break
    return found


async def _first_offset_of_open_run(client: AgentClient, session_id: str) -> int:
    """Where the open run's own events begin (it holds the carried ones from its
    input's base offset)."""
    handle = client.temporal.get_workflow_handle(session_id)
    first = [e async for e in handle.fetch_history_events()][0]
    payloads = first.workflow_execution_started_event_attributes.input.payloads
    (started,) = await client.temporal.data_converter.decode(payloads, [SessionInput])
    assert started.stream is not None
    return started.stream.base_offset


async def test_a_closed_run_without_marks_in_history_and_no_worker_is_a_typed_error(
    agent_client: AgentClient, monkeypatch: pytest.MonkeyPatch
):
    options = SessionOptions(continue_as_new_after_runs=1)
    async with build_worker(agent_client, {"talker": Talker}):
        session = await agent_client.start_session("talker", options=options)
        for n in (1, 2):
            await session.send(f"{n} hello")
        runs = await workflow_runs(agent_client, session)
    # A run recorded before marks were written to history (0.1.0) reads as none.
    monkeypatch.setattr(_checkpoints, "closed_run", _no_record)
    fresh, _ = counted(agent_client)
    with pytest.raises(ClosedRunUnreadableError) as raised:
        await fresh.checkpoint(session.id, at_turn=1)
    # Turn 1 ended the first run and began the second, which holds its mark.
    assert runs[1] in str(raised.value)
    assert "Start a worker of the build that ran it" in str(raised.value)
    assert "fork at turn 2 or later" in str(raised.value)


async def _no_record(*_: object, **__: object) -> None:
    return None


def test_a_records_marks_keep_each_state_once_and_drop_the_oldest_past_the_bound():
    state = {"k": {"value": "v" * 10}}
    marks = [TurnMark(turn=t, length=t, agent="a", state=state) for t in range(4)]  # type: ignore[arg-type]
    record = compact_marks(marks)
    assert record.same_state == [1, 2, 3] and record.marks[1].state == {}
    assert record.full_marks() == marks
    big = [TurnMark(turn=t, length=t, agent="a" * 100_000) for t in range(10)]
    kept = compact_marks(big)
    assert 0 < len(kept.marks) < 10 and kept.turns_from == 0
    assert kept.marks[-1].turn == 9


def test_an_events_index_counts_signalled_events_in_place_and_keeps_its_own():
    indexer = EventIndexer(start=5)
    indexer.published(7, b'{"kind":"turn_started"}')  # 5 and 6 came by signal
    indexer.published(8, b'{"kind":"turn_completed"}')
    assert indexer.index(end=11) == EventIndex(
        start=5, end=11, entries=[2, '{"kind":"turn_started"}', '{"kind":"turn_completed"}', 2]
    )
    assert RunRecord().events is None


async def test_a_single_runs_closed_runs_give_their_marks_from_history(
    agent_client: AgentClient,
):
    options = RunOptions(continue_as_new_after_turns=2)
    async with build_worker(agent_client, {"pager": lambda: paging_agent(4, [])}):
        run = await agent_client.start_run("pager", "Read the pages.", options=options)
        await run.result()
        by_query = await agent_client.checkpoint(run.id, at_turn=1)
        fresh, queries = counted(agent_client)
        checkpoint = await fresh.checkpoint(run.id, at_turn=1)
        events = [e async for e in fresh.get_run(run.id).events(from_offset=0)]
        first = run.temporal_run_id
    assert checkpoint == by_query and checkpoint.turn == 1
    kinds = [e.kind for e in events]
    assert kinds[0] == "run_started" and kinds.count("tool_result") == 4
    # Its first run (continued as new) gave its mark from its history; a single run
    # does not index its log, so the checkpoint's messages and its events were asked.
    assert CHECKPOINT_QUERY not in {q for _, r, q in queries.sent if r == first}


HISTORIES = Path(__file__).parents[1] / "histories"


async def _closed(path: Path) -> ClosedRun:
    history = WorkflowHistory.from_json(path.stem, await asyncio.to_thread(path.read_text))
    run = await closed_run_of(history.events, "r", data_converter)
    assert run is not None
    return run


@pytest.mark.parametrize(
    "name", ["agent_session_continued_with_its_record", "agent_run_continued_with_its_record"]
)
async def test_a_recorded_run_that_continued_as_new_holds_its_marks_and_events(name: str):
    run = await _closed(HISTORIES / f"{name}.json")
    answer = checkpoint_answer(run, CheckpointRequest(turn=1))
    assert answer is not None and answer.mark is not None and answer.mark.turn == 1
    assert answer.thread_id and answer.run_id == "r"
    held = held_events(run)
    assert held is not None and held.start == 0
    assert [item.offset for item in held.items] == list(range(held.end))
    kinds = [json.loads(decode_stream_payload(item.data).data)["kind"] for item in held.items]
    assert kinds[0] == "run_started" and "turn_completed" in kinds


async def test_a_run_recorded_by_0_1_0_holds_none_so_its_reader_asks_it():
    run = await _closed(HISTORIES / "release-0.1.0" / "agent_session_compaction_and_failure.json")
    assert run.record is None
    assert checkpoint_answer(run, CheckpointRequest(turn=1)) is None
    assert held_events(run) is None


def _entry(data: bytes) -> PublishEntry:
    payload = Payload(metadata={"encoding": b"json/plain"}, data=data)
    return PublishEntry(topic="events", data=stream_item("events", payload, 0).data)


def test_a_closed_runs_events_are_rebuilt_from_its_signals_as_its_stream_took_them():
    carried = [stream_item("events", Payload(data=b), 3 + i) for i, b in enumerate([b"c0", b"c1"])]
    state = WorkflowStreamState(
        log=carried,
        base_offset=3,
        publishers={"turn": PublisherState(sequence=1, last_seen=datetime.now(UTC))},
    )
    published = [
        PublishInput(items=[_entry(b'"dup"')], publisher_id="turn", sequence=1),  # sent again
        PublishInput(items=[_entry(b'"b"'), _entry(b'"c"')], publisher_id="turn", sequence=2),
        PublishInput(items=[_entry(b'"d"')]),
    ]
    own = '{"kind":"status","text":"RUNNING"}'

    def rebuilt(index: EventIndex) -> list[tuple[int, bytes]] | None:
        record = RunRecord(events=index)
        run = ClosedRun("r", SessionInput(agent="a", stream=state), record, None, published)
        held = held_events(run)
        if held is None:
            return None
        return [(i.offset, decode_stream_payload(i.data).data) for i in held.items]

    whole = EventIndex(start=5, end=9, entries=[2, own, 1])
    assert rebuilt(whole) == [
        (3, b"c0"),
        (4, b"c1"),
        (5, b'"b"'),
        (6, b'"c"'),
        (7, own.encode()),
        (8, b'"d"'),
    ]
    # The bound dropped the first signalled event: the rest only (no hole).
    cut = EventIndex(start=6, end=9, skip=1, entries=[1, own, 1])
    assert rebuilt(cut) == [(6, b'"c"'), (7, own.encode()), (8, b'"d"')]
    # An index that names more signalled events than the history holds is not trusted.
    assert rebuilt(EventIndex(start=5, end=10, entries=[2, own, 2])) is None


def test_an_events_index_past_its_bound_drops_its_oldest_and_counts_them():
    indexer = EventIndexer(start=0)
    event = b'{"kind":"status","text":"' + b"x" * 1000 + b'"}'
    for offset in range(0, 600, 2):  # one signalled event before each of its own
        indexer.published(offset + 1, event)
    index = indexer.index(end=600)
    assert 0 < index.start < 300 and index.end == 600
    assert index.skip == index.start // 2  # the signalled ones among those dropped
    assert sum(len(e) for e in index.entries if isinstance(e, str)) <= EVENT_BYTES_KEPT
