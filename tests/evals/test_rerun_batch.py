"""Durable rerun batches: a RerunBatch workflow fans the cases out as child runs; its
report matches the client-driven rerun; it continues as new without losing a case;
a source it cannot read is one failed record, not a wedged batch."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from temporalio.service import RPCError

from ratchet.agents import ModelPrice, ScriptedModel, ToolCallingAgent, tool
from ratchet.client import AgentClient, RunHandle
from ratchet.devserver import DevServer
from ratchet.errors import InvalidInputError, InvalidOptionsError
from ratchet.evals import Dataset, EvalsPlugin, Snapshot, contains, export_dataset, load_dataset
from ratchet.evals._batch import get_rerun, start_batch, start_rerun
from ratchet.evals._batch_workflow import RerunBatchWorkflow
from ratchet.evals._rerun import rerun, rerun_many
from ratchet.evals._rerun_types import MAX_SNAPSHOT_BYTES, BatchInput, SourceSnapshot, child_id
from ratchet.types import Message
from ratchet.wire import RunOptions, SessionOptions
from ratchet.worker import build_worker

from ..cli.test_cli_sessions import ratchet
from ..conftest import release
from ..durability.test_durability import OPTIONS, wait_for_event
from ..history import until
from ..logged_agents import EventLog
from ..workflows.test_replay import replayer
from .test_rerun import AGENTS, RAN, book, lookup, recorded_session, v1, v2


@tool(durable=True)
def book_durably(hotel: str) -> str:
    """Book a hotel, as its own activity."""
    RAN.append(f"book {hotel}")
    return f"booked {hotel}"


def v2_durable(messages, context):
    """v2, booking through the durable tool."""
    reply = v2(messages, context)
    if isinstance(reply, Message) and reply.tool_calls and reply.tool_calls[0].name == "book":
        return ScriptedModel.call("book_durably", hotel="Miraflores")
    return reply


ASKING = {
    **AGENTS,
    "weather-v2-durable": ToolCallingAgent(ScriptedModel(v2_durable), [lookup, book_durably]),
    # v2, but every lookup needs a person's approval.
    "weather-v3": ToolCallingAgent(
        ScriptedModel(v2), [lookup, book], approval_policy=lambda name, args: name == "lookup"
    ),
}


async def test_a_batch_reports_what_a_client_driven_rerun_does_and_reruns_by_reference(
    agent_client: AgentClient,
):
    RAN.clear()
    async with build_worker(agent_client, AGENTS, plugins=[EvalsPlugin()]):
        source = await recorded_session(agent_client)
        expected = await rerun(agent_client, source, agent="weather-v2")
        # Every case by reference into the source's log, however short the session.
        batch = await start_batch(agent_client, [source], agent="weather-v2", inline_bytes=0)
        report = await batch.report([contains("sun", "snow")])
        records = (await batch.result()).records
        first = agent_client.get_run(records[1].workflow_id or "")
        first_input = await first.record()
    assert RAN == ["lookup Oslo", "lookup Lima"]  # nothing ran again, nothing was booked
    assert [c.case.id for c in report.cases] == [f"{source}#1", f"{source}#2"]
    assert [c.new.answer for c in report.cases] == [c.new.answer for c in expected.cases]
    assert [c.old.answer for c in report.cases] == ["snow", "sun"]
    assert [[t.name for t in c.new.tool_calls] for c in report.cases] == [
        ["lookup"],
        ["lookup", "book"],
    ]
    assert [r.workflow_id for r in records] == [f"{batch.id}/{source}#1", f"{batch.id}/{source}#2"]
    # Case 2's run did not copy the recorded conversation: its thread names the source's log.
    base = first_input.session.thread.base
    assert base is not None and (base.workflow_id, base.version) == (source, 4)
    # Scored: Oslo's answer has no "sun"; Lima's has both (it quotes the recorded "snow").
    assert [c.new_score.value for c in report.cases] == [0.5, 1.0]


async def test_a_batch_continues_as_new_without_losing_or_repeating_a_case(
    agent_client: AgentClient,
):
    RAN.clear()
    async with build_worker(agent_client, AGENTS, plugins=[EvalsPlugin()]):
        sources = [await recorded_session(agent_client) for _ in range(3)]
        batch = await start_batch(
            agent_client, sources, agent="weather-v2", cases_per_run=2, concurrency=2
        )
        result = await batch.result()
        runs = await workflow_runs(agent_client, batch.id, batch.handle.first_execution_run_id)
        report = await get_rerun(agent_client, batch.id).report()
    assert runs == 3  # 6 cases, 2 per workflow run
    ids = [f"{s}#{n}" for s in sources for n in (1, 2)]
    assert [r.id for r in result.records] == ids
    assert [r.position for r in result.records] == [1, 2, 3, 4, 5, 6]
    assert all(r.error is None for r in result.records)
    assert [c.case.id for c in report.cases] == ids
    assert RAN == ["lookup Oslo", "lookup Lima"] * 3  # the recordings; the batch ran nothing


async def test_an_unreadable_source_is_one_failed_record_and_bad_options_fail_at_once(
    agent_client: AgentClient,
):
    async with build_worker(agent_client, AGENTS, plugins=[EvalsPlugin()]):
        source = await recorded_session(agent_client)
        batch = await start_batch(agent_client, ["no-such-session", source], agent="weather-v2")
        report = await batch.report()
        with pytest.raises(InvalidOptionsError, match="at most 50 cases at once"):
            await start_batch(agent_client, [source], agent="weather-v2", concurrency=51)
    missing, *cases = report.cases
    assert missing.case.id == "no-such-session"
    assert (
        missing.new.error is not None
        and "There is no workflow no-such-session" in missing.new.error
    )
    assert [c.new.error for c in cases] == [None, None]
    assert len(cases) == 2


async def workflow_runs(client: AgentClient, workflow_id: str, run_id: str | None) -> int:
    """How many workflow runs a chain of continue-as-new has, from ``run_id``."""
    runs = 0
    while run_id:
        runs += 1
        handle = client.temporal.get_workflow_handle(workflow_id, run_id=run_id)
        run_id = None
        async for event in handle.fetch_history_events():
            if event.HasField("workflow_execution_continued_as_new_event_attributes"):
                run_id = (
                    event.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
                )
    return runs


@pytest.mark.parametrize("of", ["sessions", "snapshots"])
async def test_a_batch_survives_a_killed_worker_without_rerunning_finished_cases(
    agent_client: AgentClient, worker_processes, event_log: Path, of: str
):
    log = EventLog(event_log)
    first = worker_processes()
    sources: list[str | Snapshot] = []
    for n in range(6):
        session = await agent_client.start_session("noter")
        await session.send(f"item {n}")
        await session.close()
        sources.append(session.id)
    if of == "snapshots":  # a dataset's, of sources past retention
        dataset = await export_dataset(agent_client, [s for s in sources if isinstance(s, str)])
        sources = [s.model_copy(update={"source": f"gone-{s.source}"}) for s in dataset.snapshots]
    batch = await start_batch(
        agent_client, sources, agent="noter-v2", concurrency=2, options=OPTIONS
    )
    names = [s if isinstance(s, str) else s.source for s in sources]
    runs = [child_id(batch.id, f"{name}#1") for name in names]
    # Cases 1 and 2 finish; cases 3 and 4 are answering when the worker is SIGKILLed.
    for run in runs[:2]:
        release(event_log, run.replace("/", "~"), "answer")
    for run in runs[2:4]:
        await wait_for_event(log, lambda r, run=run: r["kind"] == "gated_start" and r["run"] == run)
    first.kill()
    second = worker_processes()
    for run in runs[2:]:
        release(event_log, run.replace("/", "~"), "answer")
    result = await batch.result()
    report = await batch.report()

    records = log.read()
    started = Counter(r["run"] for r in records if r["kind"] == "gated_start")
    answered = Counter(r["run"] for r in records if r["kind"] == "gated_end")
    assert answered == dict.fromkeys(runs, 1)  # every case answered once
    # The finished cases did not run again; the two cut off ran again on the new worker.
    assert [started[run] for run in runs] == [1, 1, 2, 2, 1, 1]
    assert {r["pid"] for r in records if r["kind"] == "gated_end" and r["run"] in runs[2:]} == {
        second.pid
    }
    # The recorded note was answered from the recording every time: it ran once per source.
    assert sum(r["kind"] == "note_ran" for r in records) == 6
    assert [r.error for r in result.records] == [None] * 6
    assert [c.new.answer for c in report.cases] == [f"v2: noted item {n}" for n in range(6)]


async def test_under_ask_a_person_decides_each_unrecorded_call_and_an_approved_one_runs(
    agent_client: AgentClient,
):
    RAN.clear()
    async with build_worker(agent_client, ASKING, plugins=[EvalsPlugin()]):
        source = await recorded_session(agent_client)
        batch = await start_batch(agent_client, [source], agent="weather-v2", unrecorded="ask")
        lima = await case_run(agent_client, batch.id, f"{source}#2")
        (waiting,) = await lima.wait_for_pending()
        assert waiting.action.call is not None
        assert (waiting.action.kind, waiting.action.call.name) == ("approval", "book")
        await lima.approve(waiting.action.id, by="reviewer")
        report = await batch.report()
    # Only the unrecorded booking ran, once a person let it; the lookups came from the recording.
    assert RAN == ["lookup Oslo", "lookup Lima", "book Miraflores"]
    oslo, lima_case = report.cases
    assert oslo.new.live_calls == []
    assert lima_case.new.live_calls == ['book(hotel="Miraflores")']
    assert lima_case.new.answer is not None and "booked Miraflores" in lima_case.new.answer
    # The report says what ran for real, and what a rerun cannot intercept.
    markdown = report.to_markdown()
    assert f'## Calls that ran live\n\n- {source}#2: book(hotel="Miraflores")' in markdown
    assert "1 tool calls not in the recording ran live" in markdown
    assert "is not intercepted and ran for real" in report.to_html()


async def test_the_new_agents_approval_rules_decide_when_asked_and_recorded_results_still_answer(
    agent_client: AgentClient,
):
    RAN.clear()
    async with build_worker(agent_client, ASKING, plugins=[EvalsPlugin()]):
        source = await recorded_session(agent_client)
        # By default the recording's approvals stand: nobody is asked.
        reused = await (await start_batch(agent_client, [source], agent="weather-v3")).report()
        batch = await start_batch(agent_client, [source], agent="weather-v3", approvals="policy")
        oslo = await case_run(agent_client, batch.id, f"{source}#1")
        (waiting,) = await oslo.wait_for_pending()
        await oslo.approve(waiting.action.id)
        lima = await case_run(agent_client, batch.id, f"{source}#2")
        (waiting,) = await lima.wait_for_pending()
        await lima.reject(waiting.action.id, "not today")
        report = await batch.report()
    assert [c.new.answer for c in reused.cases][0] == "Oslo: snow | snow | after ['-']"
    assert RAN == ["lookup Oslo", "lookup Lima"]  # approved, the lookup was still not run
    oslo_case, lima_case = report.cases
    assert oslo_case.new.answer == "Oslo: snow | snow | after ['-']"
    assert (
        lima_case.new.answer is not None and "rejected this call: not today" in lima_case.new.answer
    )


async def case_run(client: AgentClient, batch_id: str, case: str) -> RunHandle:
    """The run answering ``case`` of a batch, once the batch has started it."""
    run = client.get_run(child_id(batch_id, case))

    async def started() -> bool:
        try:
            await run.workflow.describe()
        except RPCError:
            return False
        return True

    await until(started, bool)
    return run


async def test_the_eval_command_asks_at_the_terminal_and_reports_on_a_batch_it_attaches_to(
    agent_client: AgentClient, temporal_server: DevServer, task_queue: str, tmp_path: Path
):
    RAN.clear()
    async with build_worker(agent_client, AGENTS, plugins=[EvalsPlugin()]):
        source = await recorded_session(agent_client)
        common = ["--agent", "weather-v2", "--unrecorded", "ask"]
        asked = await ratchet(
            temporal_server, task_queue, "eval", "rerun", source, *common,
            "--out", str(tmp_path / "asked"), stdin="y\n",
        )  # fmt: skip
        booked = list(RAN)
        unattended = await ratchet(
            temporal_server, task_queue, "eval", "rerun", source, *common,
            "--out", str(tmp_path / "unattended"),
        )  # fmt: skip
        earlier = await start_batch(agent_client, [source], agent="weather-v2")
        attached = await ratchet(
            temporal_server, task_queue, "eval", "rerun", "--attach", earlier.id,
            "--agent", "weather-v2", "--out", str(tmp_path / "attached"),
        )  # fmt: skip
    code, out, err = asked
    assert code == 0, err
    assert 'approve book(hotel="Miraflores")? [y/n]' in out and "batch rerun-weather-v2-" in err
    assert booked == ["lookup Oslo", "lookup Lima", "book Miraflores"]  # approved: it ran
    code, out, err = unattended
    assert code == 0, err
    assert RAN == booked  # no input: the unrecorded call was refused, not run
    report = (tmp_path / "unattended" / "report.md").read_text()
    assert "declined at the terminal" in report
    code, out, err = attached
    assert code == 0, err
    assert "2 cases" in out and (tmp_path / "attached" / "report.html").exists()


async def test_the_recorded_side_carries_what_its_turns_cost_so_a_cost_limit_can_gate(
    agent_client: AgentClient,
):
    cheap, dear = (
        ModelPrice(input_per_million=1, output_per_million=2),
        ModelPrice(input_per_million=3, output_per_million=6),
    )
    priced = {
        "weather-priced": ToolCallingAgent(ScriptedModel(v1, price=cheap), [lookup, book]),
        "weather-v2-priced": ToolCallingAgent(ScriptedModel(v2, price=dear), [lookup, book]),
    }
    async with build_worker(agent_client, priced, plugins=[EvalsPlugin()]):
        session = await agent_client.start_session("weather-priced")
        sent = [await session.send(text) for text in ("Weather in Oslo?", "And in Lima?")]
        await session.close()
        batch = await start_batch(agent_client, [session.id], agent="weather-v2-priced")
        report = await batch.report()
        client_driven = await rerun(agent_client, session.id, agent="weather-v2-priced")
    recorded = [r.usage.cost_usd for r in sent]
    assert all(cost > 0 for cost in recorded)
    assert [c.old.usage.cost_usd for c in report.cases] == pytest.approx(recorded)
    assert [c.old.usage.cost_usd for c in client_driven.cases] == pytest.approx(recorded)
    assert [c.old.usage.input_tokens for c in report.cases] == [r.usage.input_tokens for r in sent]
    assert all(c.old.latency_s > 0 for c in report.cases)
    # Three times the price, and more turns: the gate says by how much.
    (failure,) = report.gate(max_cost_increase=0.1)
    assert failure.startswith("cost rose ") and "more than the 10% allowed" in failure
    assert report.gate(max_cost_increase=20) == []


async def test_a_dataset_snapshot_reruns_after_its_source_is_gone(
    agent_client: AgentClient, temporal_server: DevServer, task_queue: str, tmp_path: Path
):
    async with build_worker(agent_client, AGENTS, plugins=[EvalsPlugin()]):
        source = await recorded_session(agent_client)
        live = await rerun(agent_client, source, agent="weather-v2")
        dataset = tmp_path / "dataset.json"
        exported = await ratchet(
            temporal_server, task_queue, "eval", "export", source, "--out", str(dataset)
        )
        # As if past retention: the snapshot names a source the namespace no longer has.
        expired = f"{source}-expired"
        data = load_dataset(dataset)
        data.snapshots[0].source = expired
        data.write(dataset)
        snapshot = await rerun_many(
            agent_client, load_dataset(dataset).snapshots, agent="weather-v2"
        )
        from_cli = await ratchet(
            temporal_server, task_queue, "eval", "rerun", "--dataset", str(dataset),
            "--agent", "weather-v2", "--out", str(tmp_path / "report"),
        )  # fmt: skip
        missing = await ratchet(
            temporal_server, task_queue, "eval", "rerun", expired, "--agent", "weather-v2",
            "--out", str(tmp_path / "missing"),
        )  # fmt: skip
    code, out, err = exported
    assert code == 0, err
    assert out.strip() == f"1 source, 2 cases: {dataset}"
    assert [c.case.id for c in snapshot.cases] == [f"{expired}#1", f"{expired}#2"]
    assert [c.new.answer for c in snapshot.cases] == [c.new.answer for c in live.cases]
    assert [c.old.usage for c in snapshot.cases] == [c.old.usage for c in live.cases]
    code, out, err = from_cli
    assert code == 0, err
    assert "2 cases" in out
    code, out, err = missing  # the batch records the source as unreadable, and says why
    assert code == 1, err  # a case that did not run proves nothing: a CI step fails
    assert "1 case ·" in out
    assert f"warning: not rerun: There is no workflow {expired}" in err
    assert "error: 1 of 1 case did not run" in err


async def test_a_large_dataset_splits_over_batches_that_continue_as_new_into_one_report(
    agent_client: AgentClient, temporal_server: DevServer, task_queue: str, tmp_path: Path
):
    """Snapshots travel in a batch's input, so a dataset heavier than one input may be
    is split over batches; each continues as new with the snapshots it has left, and
    the command (or ``--attach``, later) joins their reports."""
    RAN.clear()
    async with build_worker(agent_client, AGENTS, plugins=[EvalsPlugin()]):
        source = await recorded_session(agent_client)
        live = await rerun(agent_client, source, agent="weather-v2")
        (exported,) = (await export_dataset(agent_client, [source])).snapshots
        # Five sources a third of a batch's snapshot allowance each: batches of 2, 2, 1.
        notes = Message(role="system", content="x" * (MAX_SNAPSHOT_BYTES // 3))
        copies = [
            exported.model_copy(
                update={"source": f"gone-{k}", "messages": [notes, *exported.messages]}
            )
            for k in range(1, 6)
        ]
        with pytest.raises(InvalidInputError, match="start_rerun splits them over batches"):
            await start_batch(agent_client, copies[:3], agent="weather-v2")
        huge = exported.model_copy(update={"messages": [notes] * 13 + exported.messages})
        with pytest.raises(InvalidInputError, match=f"{source} weighs 1[0-9]{{3}} KiB, more than"):
            await start_rerun(agent_client, [*copies, huge], agent="weather-v2")
        started = await start_rerun(
            agent_client, copies, agent="weather-v2", concurrency=4, cases_per_run=1
        )
        batches = started.batches
        report = await started.report()
        runs = [
            await workflow_runs(agent_client, b.id, b.handle.first_execution_run_id)
            for b in batches
        ]
        last_inputs = [await started_input(agent_client, b.id) for b in batches]
        dataset = tmp_path / "dataset.json"
        Dataset(exported_at=datetime.now(UTC), snapshots=copies).write(dataset)
        rerun_ = ["eval", "rerun", "--agent", "weather-v2"]
        from_cli = await ratchet(
            temporal_server, task_queue, *rerun_, "--dataset", str(dataset), "--out",
            str(tmp_path / "a"),
        )  # fmt: skip
        said = re.search(r"ratchet eval rerun (.*) --agent", from_cli[2])
        assert said, from_cli[2]
        attached = await ratchet(
            temporal_server, task_queue, *rerun_, *said[1].split(), "--out", str(tmp_path / "b")
        )
    assert [b.id[-4:] for b in batches] == ["1of3", "2of3", "3of3"]
    assert runs == [4, 4, 2]  # a case per workflow run
    # Each continued run carried only the snapshots it had yet to plan.
    assert [[s.source for s in i.snapshots] for i in last_inputs] == [
        ["gone-2"],
        ["gone-4"],
        ["gone-5"],
    ]
    assert [c.case.id for c in report.cases] == [
        f"gone-{k}#{n}" for k in range(1, 6) for n in (1, 2)
    ]
    assert [c.new.answer for c in report.cases] == [c.new.answer for c in live.cases] * 5
    assert [c.old.usage for c in report.cases] == [c.old.usage for c in live.cases] * 5
    assert RAN == ["lookup Oslo", "lookup Lima"]  # all recorded: nothing ran again
    for code, out, err in (from_cli, attached):
        assert code == 0, err
        assert "10 cases" in out and "warning" not in err
    assert "batches " in from_cli[2] and said[1].count("--attach") == 3
    written = [json.loads((tmp_path / d / "report.json").read_text()) for d in "ab"]
    assert written[0]["cases"] == written[1]["cases"]


def long_snapshot(name: str, turns: int, chars: int) -> SourceSnapshot:
    """A conversation of ``turns`` user messages of about ``chars`` characters each."""
    messages: list[Message] = []
    for n in range(1, turns + 1):
        messages += [
            Message(role="user", content=f"{name}.{n} " + "x" * chars),
            Message(role="assistant", content=f"answer {n}"),
        ]
    return SourceSnapshot(source=name, messages=messages)


COUNTING = {"counting": ToolCallingAgent(ScriptedModel(lambda m, _: f"{len(m)} messages"), [])}


async def test_a_batch_whose_history_fills_continues_as_new_between_sources(
    agent_client: AgentClient,
):
    """Cases planned inline copy their conversations into the batch's history: when
    Temporal suggests it, the batch continues as new at the next source, long before
    ``cases_per_run`` cases; a snapshot whose plan alone would be too much is refused."""
    # Three sources of 16 messages of 7 KB: each case copies the conversation so far.
    sources = [long_snapshot(f"long-{k}", 16, 7000) for k in range(3)]
    async with build_worker(agent_client, COUNTING, plugins=[EvalsPlugin()]):
        with pytest.raises(InvalidInputError, match="long-x is too long to rerun in a batch"):
            await start_batch(agent_client, [long_snapshot("long-x", 60, 20_000)], agent="c")
        batch = await start_batch(agent_client, sources, agent="counting")
        report = await batch.report()
        first = batch.handle.first_execution_run_id
        runs = await workflow_runs(agent_client, batch.id, first)
        history = await agent_client.temporal.get_workflow_handle(
            batch.id, run_id=first
        ).fetch_history()
    assert runs >= 2  # well before 500 cases: Temporal suggested it
    assert [c.case.id for c in report.cases] == [
        f"long-{k}#{n}" for k in range(3) for n in range(1, 17)
    ]
    assert [c.new.answer for c in report.cases] == [
        f"{2 * n - 1} messages" for n in range(1, 17)
    ] * 3
    # The run that continued as new replays.
    replayed = await replayer(RerunBatchWorkflow).replay_workflow(history)
    assert replayed.replay_failure is None


async def test_large_inline_cases_start_a_few_at_a_time(agent_client: AgentClient):
    """Cases of a long snapshot each copy about 1 MB of conversation into their run's
    start: twenty started in one workflow task would pass Temporal's 4 MB limit on
    what one task may send, and the batch would fail that task for ever."""
    long = long_snapshot("wide", 8, 130_000)  # 1 MB; case 8 copies it all
    async with build_worker(agent_client, COUNTING, plugins=[EvalsPlugin()]):
        batch = await start_batch(agent_client, [long], agent="counting", concurrency=20)
        report = await batch.report()
    assert [c.new.answer for c in report.cases] == [f"{2 * n - 1} messages" for n in range(1, 9)]


async def started_input(client: AgentClient, workflow_id: str) -> BatchInput:
    """The input the latest run of a batch's workflow started with."""
    handle = client.temporal.get_workflow_handle(workflow_id)
    async for event in handle.fetch_history_events():
        attributes = event.workflow_execution_started_event_attributes
        (found,) = await client.temporal.data_converter.decode(
            attributes.input.payloads, [BatchInput]
        )
        return found
    raise AssertionError(f"{workflow_id} has no history")


async def test_a_batch_reruns_a_fork_and_a_session_that_continued_as_new_by_reference(
    agent_client: AgentClient,
):
    RAN.clear()
    async with build_worker(agent_client, AGENTS, plugins=[EvalsPlugin()]):
        # A session whose workflow continued as new after each message.
        long = await agent_client.start_session(
            "weather", options=SessionOptions(continue_as_new_after_runs=1)
        )
        for text in ("Weather in Oslo?", "And in Lima?", "Oslo again?"):
            await long.send(text)
        await long.close()
        # A fork of it after its first message, which then went its own way.
        fork = await agent_client.fork(long.id, at_turn=2)
        await fork.send("And in Lima, from the fork?")
        await fork.close()
        batch = await start_batch(
            agent_client, [long.id, fork.id], agent="weather-v2", inline_bytes=0
        )
        report = await batch.report()
        fork_case = await case_run(agent_client, batch.id, f"{fork.id}#2")
        fork_thread = (await fork_case.record()).session.thread
    latest = (await long.workflow.describe()).raw_description.workflow_execution_info
    assert latest.first_run_id != latest.execution.run_id  # it did continue as new
    assert [c.case.id for c in report.cases] == [
        f"{long.id}#1",
        f"{long.id}#2",
        f"{long.id}#3",
        f"{fork.id}#1",
        f"{fork.id}#2",
    ]
    assert all(c.new.error is None for c in report.cases), [c.new.error for c in report.cases]
    # Teacher-forced on the right conversation: case 3 saw two recorded answers before it.
    assert report.cases[2].new.answer == "Oslo: snow | snow | after ['sun']"
    assert report.cases[4].old.answer == "sun"
    assert report.cases[4].new.answer is not None
    assert report.cases[4].new.answer.endswith("after ['snow']")
    # The fork's case names the fork's log; the fork's log names its source's.
    assert fork_thread.base is not None and fork_thread.base.workflow_id == fork.id
    assert RAN == ["lookup Oslo", "lookup Lima", "lookup Oslo", "lookup Lima"]  # recorded only


async def test_an_agent_no_worker_hosts_fails_each_case_saying_so_and_the_batch_ends(
    agent_client: AgentClient,
):
    async with build_worker(agent_client, AGENTS, plugins=[EvalsPlugin()]):
        source = await recorded_session(agent_client)
        batch = await start_batch(agent_client, [source], agent="weather-v9")
        report = await batch.report()
    assert len(report.cases) == 2
    for case in report.cases:
        assert case.new.error is not None and "weather-v9" in case.new.error
        assert case.new_score.value == 0.0


async def test_fast_mode_turns_are_read_on_both_sides(agent_client: AgentClient):
    fast = RunOptions(fast=True)  # turns as local activities: markers in history
    async with build_worker(agent_client, AGENTS, plugins=[EvalsPlugin()]):
        session = await agent_client.start_session("weather", options=SessionOptions(run=fast))
        for text in ("Weather in Oslo?", "And in Lima?"):
            await session.send(text)
        await session.close()
        batch = await start_batch(agent_client, [session.id], agent="weather-v2", options=fast)
        report = await batch.report()
    assert [c.old.usage.requests for c in report.cases] == [2, 2]  # two model calls each
    assert all(c.old.latency_s > 0 for c in report.cases)
    assert [[t.name for t in c.new.tool_calls] for c in report.cases] == [
        ["lookup"],
        ["lookup", "book"],
    ]


async def test_a_free_running_batch_carries_the_new_agents_answers_forward_by_reference(
    agent_client: AgentClient,
):
    RAN.clear()
    async with build_worker(agent_client, AGENTS, plugins=[EvalsPlugin()]):
        source = await recorded_session(agent_client)
        batch = await start_batch(
            agent_client, [source], agent="weather-v2", unrecorded="live", free_running=True
        )
        report = await batch.report()
        expected = await rerun(
            agent_client, source, agent="weather-v2", unrecorded="live", free_running=True
        )
        second = await (await case_run(agent_client, batch.id, f"{source}#2")).record()
        (exported,) = (await export_dataset(agent_client, [source])).snapshots
        gone = exported.model_copy(update={"source": f"{source}-gone"})
        of_snapshot = await start_batch(
            agent_client, [gone], agent="weather-v2", unrecorded="live", free_running=True
        )
        snapshot_report = await of_snapshot.report()
        broken = await start_batch(agent_client, [source], agent="weather-v9", free_running=True)
        failed = (await broken.result()).records
        broken_report = await broken.report()
    oslo, lima = report.cases
    # Case 2 follows v2's own first answer (not the recorded "snow"), as rerun_many does.
    assert lima.new.answer == (
        "Lima: sun | booked Miraflores | after [\"Oslo: snow | snow | after ['-']\"]"
    )
    assert [c.new.answer for c in report.cases] == [c.new.answer for c in expected.cases]
    assert [c.new.answer for c in snapshot_report.cases] == [c.new.answer for c in report.cases]
    assert lima.new.live_calls == ['book(hotel="Miraflores")']
    base = second.session.thread.base  # case 2's thread: case 1's run, by reference
    assert base is not None and base.workflow_id == child_id(batch.id, f"{source}#1")
    # A case that fails leaves the rest of its chain nothing to follow.
    assert failed[0].error is not None and "weather-v9" in failed[0].error
    assert failed[1].error == f"Not rerun: free-running, it follows {source}#1, which failed."
    # Reported with its recorded side: the case exists, its rerun did not happen.
    assert [c.old.answer for c in broken_report.cases] == ["snow", "sun"]
    assert not broken_report.cases[1].case.metadata.get("unreadable")
    (cost_gate,) = broken_report.gate(max_cost_increase=0.5)
    assert cost_gate.startswith("2 of 2 cases did not run to an answer")


async def test_under_ask_a_durable_tool_waits_for_a_person_too_and_a_rejection_is_not_live(
    agent_client: AgentClient,
):
    RAN.clear()
    async with build_worker(agent_client, ASKING, plugins=[EvalsPlugin()]):
        source = await recorded_session(agent_client)
        batch = await start_batch(
            agent_client, [source], agent="weather-v2-durable", unrecorded="ask"
        )
        lima = await case_run(agent_client, batch.id, f"{source}#2")
        (waiting,) = await lima.wait_for_pending()
        assert waiting.action.call is not None
        assert (waiting.action.kind, waiting.action.call.name) == ("approval", "book_durably")
        await lima.reject(waiting.action.id, "no bookings in a rerun")
        report = await batch.report()
    assert RAN == ["lookup Oslo", "lookup Lima"]  # rejected: the booking never ran
    lima_case = report.cases[1]
    assert lima_case.new.live_calls == []  # nothing ran live
    assert lima_case.new.answer is not None and "rejected this call" in lima_case.new.answer


async def test_deleting_a_session_deletes_the_reruns_of_it_and_no_other(
    agent_client: AgentClient,
):
    temporal = agent_client.temporal
    async with build_worker(agent_client, AGENTS, plugins=[EvalsPlugin()]):
        source = await recorded_session(agent_client)
        other = await recorded_session(agent_client)
        batch = await start_batch(agent_client, [source], agent="weather-v2", inline_bytes=0)
        kept = await start_batch(agent_client, [other], agent="weather-v2", inline_bytes=0)
        cases = [r.workflow_id for r in (await batch.result()).records]
        await kept.result()

        deleted = await agent_client.delete_session(source)

    assert deleted.eval_runs == sorted([batch.id, *cases])
    assert [w async for w in temporal.list_workflows(f"RootWorkflowId = '{batch.id}'")] == []
    assert len([w async for w in temporal.list_workflows(f"RootWorkflowId = '{kept.id}'")]) == 3
