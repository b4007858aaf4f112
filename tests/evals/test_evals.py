"""Evaluators: each built-in one, a case's weighted score, and the LLM judge against the
local OpenAI-compatible server (its verdicts cached, so a gate does not flicker)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from ratchet.agents import OpenAIChatModel, ScriptedModel, ToolCallingAgent
from ratchet.client import AgentClient
from ratchet.errors import InvalidInputError, ModelError
from ratchet.evals import (
    Case,
    Compared,
    LLMJudge,
    Outcome,
    Report,
    assert_gate,
    called,
    compare,
    contains,
    cost_budget,
    exact,
    json_schema,
    latency_budget,
    load_cases,
    matches_model,
    regex,
    score_case,
)
from ratchet.evals._report import scored
from ratchet.testing import OpenAIServer
from ratchet.types import ToolCall, Usage
from ratchet.worker import build_worker

CASE = Case(id="oslo", prompt="Weather in Oslo?", expected="Snow in Oslo")


def outcome(answer: str, **fields) -> Outcome:
    return Outcome(answer=answer, **fields)


def test_text_evaluators_say_why_they_score_what_they_score():
    assert exact()(CASE, outcome(" Snow in Oslo ")).value == 1.0
    miss = exact()(CASE, outcome("snow in oslo"))
    assert miss.value == 0.0 and "expected 'Snow in Oslo'" in miss.reason
    assert exact(ignore_case=True)(CASE, outcome("snow in oslo")).value == 1.0
    half = contains("snow", "rain")(CASE, outcome("Snow today"))
    assert half.value == 0.5 and "missing 'rain'" in half.reason
    assert contains()(CASE, outcome("It is snow in oslo.")).value == 1.0  # the expected text
    assert regex(r"\d+ ?°C")(CASE, outcome("It is -3 °C")).value == 1.0
    assert regex(r"\d+ ?°C")(CASE, outcome("cold")).value == 0.0


def test_structured_answers_are_checked_against_a_schema_or_a_model():
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
        "required": ["city", "celsius"],
    }
    check = json_schema(schema)
    assert check(CASE, outcome('{"city": "Oslo", "celsius": -3}')).value == 1.0
    wrong = check(CASE, outcome('{"city": "Oslo", "celsius": "cold"}'))
    assert wrong.value == 0.0 and "celsius" in wrong.reason
    assert "not JSON" in check(CASE, outcome("Oslo, -3")).reason
    with pytest.raises(Exception, match="is not valid"):
        json_schema({"type": "no-such-type"})

    class Weather(BaseModel):
        city: str
        celsius: float

    assert matches_model(Weather)(CASE, outcome('{"city": "Oslo", "celsius": -3}')).value == 1.0
    assert matches_model(Weather)(CASE, outcome('{"city": "Oslo"}')).value == 0.0


def test_tool_call_expectations_and_budgets():
    calls = [ToolCall(id="c1", name="lookup", arguments='{"city": "Oslo", "units": "C"}')]
    done = outcome("Snow", tool_calls=calls, usage=Usage(cost_usd=0.002), latency_s=1.5)
    assert called("lookup", city="Oslo")(CASE, done).value == 1.0
    wrong = called("lookup", city="Bergen")(CASE, done)
    assert wrong.value == 0.0 and 'lookup(city="Oslo", units="C")' in wrong.reason
    assert cost_budget(0.001)(CASE, done).value == 0.0
    assert cost_budget(0.01)(CASE, done).value == 1.0
    assert latency_budget(2)(CASE, done).value == 1.0


async def test_a_case_score_is_the_weighted_mean_and_a_failed_run_scores_zero():
    weighted = CASE.model_copy(update={"weights": {"exact": 3}})
    both = await score_case(weighted, outcome("snow in oslo"), [exact(), contains()])
    assert both.scores["exact"].value == 0.0 and both.scores["contains"].value == 1.0
    assert both.value == pytest.approx(0.25)  # (0 * 3 + 1 * 1) / 4

    def broken(case, result):
        raise RuntimeError("boom")

    scored = await score_case(CASE, outcome("Snow in Oslo"), [exact(), broken])
    assert scored.value == 0.5 and "RuntimeError: boom" in scored.scores["broken"].reason
    failed = await score_case(CASE, Outcome(error="ModelError: 401"), [exact()])
    assert failed.value == 0.0 and "the run failed" in failed.scores["exact"].reason


async def test_the_llm_judge_grades_once_per_answer_and_remembers(tmp_path: Path):
    cache = tmp_path / "judge.json"
    with OpenAIServer() as server:
        server.text('{"score": 0.8, "reason": "right city, vague"}')
        server.text("I think it is fine")  # not a verdict
        model = OpenAIChatModel("judge", base_url=server.base_url, api_key="k", temperature=0)
        judge = LLMJudge(model, "Names the weather and the city.", cache_path=cache)
        first = await judge(CASE, outcome("Snowy"))
        again = await judge(CASE, outcome("Snowy"))
        garbled = await judge(CASE, outcome("Rainy"))
        await model.client.close()
    assert (first.value, first.reason) == (0.8, "right city, vague") and again == first
    assert garbled.value == 0.0 and "not a verdict" in garbled.reason
    assert judge.calls == 2 and len(server.requests) == 2
    request = server.requests[0].body
    assert request["temperature"] == 0
    prompt = request["messages"][0]["content"]
    assert "Names the weather and the city." in prompt and "Snowy" in prompt
    assert "Snow in Oslo" in prompt  # the expected answer
    # A new judge with the same cache file asks the model nothing.
    reread = LLMJudge(model, "Names the weather and the city.", cache_path=cache)
    assert await reread(CASE, outcome("Snowy")) == first and reread.calls == 0
    assert len(json.loads(cache.read_text())) == 2


async def compared(case: Case, old: Outcome, new: Outcome) -> Compared:
    return await scored(case, old, new, [contains()])


async def test_a_report_shows_old_and_new_side_by_side_and_gates_on_score_and_cost(
    tmp_path: Path,
):
    cases = [
        await compared(
            CASE,
            outcome("Snow in Oslo", usage=Usage(cost_usd=0.010, input_tokens=90)),
            outcome("Rain | wind", usage=Usage(cost_usd=0.012, input_tokens=100)),
        ),
        await compared(
            Case(id="bergen", prompt="Bergen?", expected="rain"),
            outcome("rain", usage=Usage(cost_usd=0.010)),
            outcome("Rain again", usage=Usage(cost_usd=0.010)),
        ),
    ]
    report = Report(agent="weather-v2", cases=cases)
    assert (report.old_score, report.new_score) == (1.0, 0.5)
    assert report.gate(min_score=0.5, max_cost_increase=0.2) == []
    assert_gate(report, min_score=0.5)
    free = report.model_copy(
        update={"cases": [c.model_copy(update={"old": outcome("x")}) for c in report.cases]}
    )
    assert "no cost to compare with" in free.gate(max_cost_increase=0.1)[0]
    with pytest.raises(AssertionError, match="weather-v2 fails the gate: score 0.500"):
        assert_gate(report, min_score=0.9)
    failures = report.gate(min_score=0.9, max_cost_increase=0.05)
    assert failures == [
        "score 0.500 is below the minimum 0.900",
        "cost rose 10.0% ($0.0200 -> $0.0220), more than the 5% allowed",
    ]
    markdown = report.to_markdown()
    assert "| oslo | Snow in Oslo | Rain \\| wind | 1.00 | 0.00 | 90 → 100 |" in markdown
    assert "- oslo · contains: 1.00 → 0.00 (missing 'Snow in Oslo')" in markdown
    written = report.write(tmp_path / "out")
    assert [p.name for p in written] == ["report.md", "report.html", "report.json"]
    page = written[1].read_text()
    assert page.startswith("<!doctype html>") and "<script" not in page  # self-contained
    assert "Rain | wind" in page and page.count("<svg") == 2  # score and cost plots
    assert '<tr class="worse"><td>oslo</td>' in page
    data = json.loads(written[2].read_text())
    assert data["new_score"] == 0.5 and data["cases"][0]["new"]["answer"] == "Rain | wind"


def test_cases_load_from_a_json_file_and_bad_files_say_what_is_wrong(tmp_path: Path):
    path = tmp_path / "cases.json"
    path.write_text(
        json.dumps([{"prompt": "Oslo?", "expected": "snow"}, {"id": "b", "prompt": "x"}])
    )
    assert [(c.id, c.prompt, c.expected) for c in load_cases(path)] == [
        ("case-1", "Oslo?", "snow"),
        ("b", "x", None),
    ]
    path.write_text(json.dumps([{"expected": "snow"}]))
    with pytest.raises(InvalidInputError, match="Case 1 .* needs a 'prompt'"):
        load_cases(path)
    path.write_text(json.dumps([{"prompt": "x", "weights": "heavy"}]))
    with pytest.raises(InvalidInputError, match="Case 1 in .*: .* at weights"):
        load_cases(path)
    path.write_text('[{"prompt": "x"')
    with pytest.raises(InvalidInputError, match="is not JSON"):
        load_cases(path)
    with pytest.raises(InvalidInputError, match="There is no cases file .*gone.json"):
        load_cases(tmp_path / "gone.json")


async def test_compare_runs_every_case_on_both_agents_and_a_failed_run_scores_zero(
    agent_client: AgentClient,
):
    def answer(messages, context):
        return "snow" if "Oslo" in messages[0].text else ModelError("refused", retryable=False)

    agents = {
        "old": ToolCallingAgent(ScriptedModel(lambda messages, context: "no idea")),
        "new": ToolCallingAgent(ScriptedModel(answer)),
    }
    cases = [CASE.model_copy(update={"expected": "snow"}), Case(id="x", prompt="Lima?")]
    async with build_worker(agent_client, agents):
        report = await compare(
            agent_client, cases, old="old", new="new", evaluators=[contains("snow")]
        )
    oslo, lima = report.cases
    assert (oslo.old.answer, oslo.new.answer) == ("no idea", "snow")
    assert (oslo.old_score.value, oslo.new_score.value) == (0.0, 1.0)
    assert lima.new.error is not None and "refused" in lima.new.error
    assert lima.new_score.value == 0.0 and oslo.new.latency_s > 0
    assert report.new_score == 0.5 and report.gate(min_score=0.6) != []
