"""Rerunning a recorded session against a changed agent: recorded tool results reused
(nothing runs twice), an unrecorded call refused or run live, teacher-forced and
free-running threads, and the report's side-by-side contents."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ratchet.agents import ScriptedModel, ToolCallingAgent, tool
from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.errors import InvalidInputError
from ratchet.evals import Dataset, EvalsPlugin, contains
from ratchet.evals._recording import user_turns
from ratchet.evals._rerun import find_sources, rerun, rerun_many
from ratchet.types import Message
from ratchet.worker import build_worker

from ..cli.test_cli_sessions import ratchet, read_until, spawn
from ..history import until

RAN: list[str] = []


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    RAN.append(f"lookup {city}")
    return {"Oslo": "snow", "Lima": "sun"}[city]


@tool
def book(hotel: str) -> str:
    """Book a hotel."""
    RAN.append(f"book {hotel}")
    return f"booked {hotel}"


def asked(messages: list[Message]) -> tuple[str, list[Message]]:
    """The latest user message's city, and the tool results since it."""
    last = max(i for i, m in enumerate(messages) if m.role == "user")
    city = "Oslo" if "Oslo" in messages[last].text else "Lima"
    return city, [m for m in messages[last:] if m.role == "tool"]


def v1(messages, context):
    city, results = asked(messages)
    return ScriptedModel.call("lookup", city=city) if not results else f"{results[0].text}"


def v2(messages, context):
    """Looks up, books a hotel in Lima, and says what it saw before."""
    city, results = asked(messages)
    earlier = [m.text for m in messages if m.role == "assistant" and m.content]
    if not results:
        return ScriptedModel.call("lookup", city=city)
    if city == "Lima" and len(results) == 1:
        return ScriptedModel.call("book", hotel="Miraflores")
    return f"{city}: {results[0].text} | {results[-1].text} | after {earlier[-1:] or ['-']}"


AGENTS = {
    "weather": ToolCallingAgent(ScriptedModel(v1), [lookup, book]),
    "weather-v2": ToolCallingAgent(ScriptedModel(v2), [lookup, book]),
}


async def recorded_session(client: AgentClient) -> str:
    session = await client.start_session("weather")
    await session.send("Weather in Oslo?")
    await session.send("And in Lima?")
    await session.close()
    return session.id


async def test_a_teacher_forced_rerun_reuses_recorded_results_and_refuses_new_calls(
    agent_client: AgentClient,
):
    RAN.clear()
    async with build_worker(agent_client, AGENTS, plugins=[EvalsPlugin()]):
        source = await recorded_session(agent_client)
        assert RAN == ["lookup Oslo", "lookup Lima"]
        report = await rerun(
            agent_client, source, agent="weather-v2", evaluators=[contains("sun", "snow")]
        )
    assert RAN == ["lookup Oslo", "lookup Lima"]  # nothing ran again, nothing was booked
    oslo, lima = report.cases
    assert (oslo.case.prompt, oslo.old.answer) == ("Weather in Oslo?", "snow")
    assert oslo.new.answer == "Oslo: snow | snow | after ['-']"
    # Teacher-forced: case 2 continues the recorded conversation (v1's "snow").
    assert lima.new.answer is not None and lima.new.answer.startswith("Lima: sun | Not run:")
    assert lima.new.answer.endswith("after ['snow']")
    assert [c.name for c in lima.new.tool_calls] == ["lookup", "book"]
    assert lima.new.live_calls == []
    assert (oslo.old_score.value, oslo.new_score.value) == (0.5, 0.5)
    assert "| Weather in Oslo?" not in report.to_markdown()  # cases are named by id
    assert f"| {source}#2 | sun |" in report.to_markdown()


async def test_unrecorded_calls_run_live_when_asked_and_free_running_carries_new_answers(
    agent_client: AgentClient,
):
    RAN.clear()
    async with build_worker(agent_client, AGENTS, plugins=[EvalsPlugin()]):
        source = await recorded_session(agent_client)
        report = await rerun(
            agent_client, source, agent="weather-v2", unrecorded="live", free_running=True
        )
    assert RAN == ["lookup Oslo", "lookup Lima", "book Miraflores"]  # only the new call ran
    oslo, lima = report.cases
    assert lima.new.live_calls == ['book(hotel="Miraflores")']
    # Free-running: case 2 follows v2's own first answer, not the recorded "snow".
    assert lima.new.answer == (
        "Lima: sun | booked Miraflores | after [\"Oslo: snow | snow | after ['-']\"]"
    )


EVALUATORS = [contains("sun")]
"""For the CLI test: ``--evaluators tests.evals.test_rerun:EVALUATORS``."""


def reads_output(case: Any, outcome: Any) -> Any:
    return outcome.output  # an Outcome has ``answer``: it raises AttributeError


BROKEN = [contains("sun"), reads_output]
"""For the CLI test: an evaluator with a typo scores 0, and the command says why."""


async def test_the_eval_command_writes_the_report_and_exits_1_when_the_gate_fails(
    agent_client: AgentClient, temporal_server: DevServer, task_queue: str, tmp_path: Path
):
    async with build_worker(agent_client, AGENTS, plugins=[EvalsPlugin()]):
        source = await recorded_session(agent_client)
        common = ["--agent", "weather-v2", "--evaluators", "tests.evals.test_rerun:EVALUATORS"]
        passed = await ratchet(
            temporal_server,
            task_queue,
            "eval",
            "rerun",
            source,
            *common,
            "--min-score",
            "0.5",
            "--out",
            str(tmp_path / "a"),
        )
        failed = await ratchet(
            temporal_server,
            task_queue,
            "eval",
            "rerun",
            source,
            *common,
            "--min-score",
            "0.9",
            "--out",
            str(tmp_path / "b"),
        )
        unscored = await ratchet(
            temporal_server,
            task_queue,
            "eval",
            "rerun",
            source,
            "--agent",
            "weather-v2",
            "--min-score",
            "0.9",
        )
        bare = await ratchet(
            temporal_server, task_queue, "eval", "rerun", source, "--agent", "weather-v2",
            "--out", str(tmp_path / "c"),
        )  # fmt: skip
        broken = await ratchet(
            temporal_server, task_queue, "eval", "rerun", source, "--agent", "weather-v2",
            "--evaluators", "tests.evals.test_rerun:BROKEN", "--out", str(tmp_path / "d"),
        )  # fmt: skip
    code, out, err = passed
    assert code == 0, err
    assert "2 cases · score 0.500 -> 0.500" in out
    assert (tmp_path / "a" / "report.md").read_text().startswith("# Evaluation of `weather-v2`")
    code, out, err = failed
    assert code == 1 and "gate: score 0.500 is below the minimum 0.900" in err
    code, out, err = unscored
    assert code == 2 and "--min-score needs --evaluators" in err
    code, out, err = bare  # no score without evaluators: it says so
    assert code == 0 and "(no --evaluators: nothing scored the answers)" in out, err
    code, out, err = broken  # scored 0 where it raised, and said so once
    said = "warning: evaluator reads_output failed: AttributeError"
    assert code == 0 and err.count(said) == 1, err


NOT_EVALUATORS = "contains"
"""For the CLI test: a name that is not a list of evaluators."""


async def test_the_eval_command_says_what_is_wrong_with_its_arguments_and_exits_2(
    agent_client: AgentClient, temporal_server: DevServer, task_queue: str, tmp_path: Path
):
    """Each mistake is named before anything runs (no traceback, exit 2)."""
    rerun = ["eval", "rerun", "session-x", "--agent", "weather-v2"]
    cases = tmp_path / "cases.json"
    cases.write_text('[{"prompt": "x"}, {"expected": "y"}]')
    dataset = tmp_path / "dataset.json"
    Dataset(exported_at=datetime.now(UTC), snapshots=[]).write(dataset)
    mistakes = {
        "'0' is not a whole number of at least 1": [*rerun, "--concurrency", "0"],
        "'many' is not a whole number of at least 1": [*rerun, "--limit", "many"],
        "give module:NAME": [*rerun, "--evaluators", "tests.evals.test_rerun"],
        "cannot import tests.nowhere": [*rerun, "--evaluators", "tests.nowhere:E"],
        "tests.evals.test_rerun has no MISSING": [
            *rerun,
            "--evaluators",
            "tests.evals.test_rerun:MISSING",
        ],
        "is a str: it must be a list of evaluators": [
            *rerun,
            "--evaluators",
            "tests.evals.test_rerun:NOT_EVALUATORS",
        ],
        "is not a dataset written by `ratchet eval export`": [*rerun, "--dataset", str(cases)],
        "--attach reports on batches already started": [*rerun, "--attach", "rerun-x"],
        "There is no dataset file": [*rerun, "--dataset", str(tmp_path / "gone.json")],
        "Case 2 in": ["eval", "run", str(cases), "--agent", "a", "--baseline", "b"],
        "not a list of cases: rerun it with `ratchet eval rerun --dataset": [
            "eval",
            "run",
            str(dataset),
            "--agent",
            "a",
            "--baseline",
            "b",
        ],  # fmt: skip
    }
    slots = asyncio.Semaphore(4)  # each is a process of its own: a few at once

    async def attempt(args: list[str]) -> tuple[int, str, str]:
        async with slots:
            return await ratchet(temporal_server, task_queue, *args)

    answers = await asyncio.gather(*(attempt(args) for args in mistakes.values()))
    for (expected, args), (code, _, err) in zip(mistakes.items(), answers, strict=True):
        assert expected in err and "Traceback" not in err, (args, err)
        assert code == 2, (args, err)
    # Through the API, no runs at once is refused too (it would wait for ever).
    with pytest.raises(InvalidInputError, match="concurrency=0"):
        await rerun_many(agent_client, ["session-x"], agent="weather-v2", concurrency=0)


async def test_sources_found_by_a_visibility_query_rerun_into_one_report(
    agent_client: AgentClient,
):
    name = f"weather-{uuid.uuid4().hex[:8]}"  # the query finds this test's sessions only
    async with build_worker(
        agent_client, {**AGENTS, name: AGENTS["weather"]}, plugins=[EvalsPlugin()]
    ):
        first = await agent_client.start_session(name)
        second = await agent_client.start_session(name)
        for session in (first, second):
            await session.send("Weather in Oslo?")
            await session.close()
        query = f'AgentName = "{name}"'
        # Visibility lags the writes a little.
        found = await until(lambda: find_sources(agent_client, query), lambda ids: len(ids) == 2)
        report = await rerun_many(agent_client, found, agent="weather-v2")
    assert sorted(found) == sorted([first.id, second.id])
    assert [c.new.answer for c in report.cases] == ["Oslo: snow | snow | after ['-']"] * 2


def test_a_thread_without_a_user_message_has_no_case_to_rerun():
    # An abandoned chat (or a fork at turn 0) has no user message: it gives no case,
    # instead of failing the batch's plan (a zip of unequal lists did).
    assert user_turns([]) == []
    assert user_turns([Message.system("be brief")]) == []
    thread = [Message.system("s"), Message.user("a"), Message.assistant("b"), Message.user("c")]
    assert user_turns(thread) == [(1, 3), (3, 4)]


async def test_a_rerun_no_worker_takes_says_so_and_names_the_task_queue(
    agent_client: AgentClient, temporal_server: DevServer, task_queue: str
):
    async with build_worker(agent_client, AGENTS, plugins=[EvalsPlugin()]):
        source = await recorded_session(agent_client)
    # The worker has stopped: the batch's workflow task waits for one.
    rerun_ = await spawn(temporal_server, task_queue, "eval", "rerun", source, "--agent", "w2")
    try:
        said = await read_until(rerun_.stderr, "--task-queue")
    finally:
        rerun_.kill()
        await rerun_.communicate()
    assert "note: no worker has taken batch " in said, said
    assert f"--task-queue {task_queue}" in said, said
