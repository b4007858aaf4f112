"""Evaluators: functions ``(case, outcome) -> Score`` (or an awaitable of one).

Built in: ``exact``, ``contains``, ``regex``, ``json_schema``, ``matches_model``,
``called`` (a tool-call expectation), ``cost_budget``, ``latency_budget`` and
``LLMJudge``. Write your own as a plain function; its ``__name__`` names it in
reports and in a case's ``weights``.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ratchet.agents import ModelClient, RunContext
from ratchet.types import Message

from ._cases import Case, CaseScore, Outcome, Score

Evaluator = Callable[[Case, Outcome], Score | Awaitable[Score]]
"""Any evaluator: sync or async (``LLMJudge``)."""
Check = Callable[[Case, Outcome], Score]
"""A synchronous evaluator (every built-in one but the judge)."""


def named(name: str, fn: Check) -> Check:
    fn.__name__ = name  # type: ignore[attr-defined]
    return fn


def exact(*, ignore_case: bool = False) -> Check:
    """1 when the answer equals the case's ``expected`` (whitespace trimmed)."""

    def check(case: Case, outcome: Outcome) -> Score:
        want, got = (case.expected or "").strip(), (outcome.answer or "").strip()
        if ignore_case:
            want, got = want.lower(), got.lower()
        if want == got:
            return Score(value=1.0, reason="equal to the expected answer")
        return Score(value=0.0, reason=f"expected {want[:80]!r}, got {got[:80]!r}")

    return named("exact", check)


def contains(*needles: str, ignore_case: bool = True) -> Check:
    """The share of ``needles`` (default: the case's ``expected``) the answer contains."""

    def check(case: Case, outcome: Outcome) -> Score:
        wanted = list(needles) or ([case.expected] if case.expected else [])
        if not wanted:
            return Score(value=0.0, reason="nothing to look for: give needles or expected")
        answer = outcome.answer or ""
        fold = (lambda s: s.lower()) if ignore_case else (lambda s: s)
        missing = [n for n in wanted if fold(n) not in fold(answer)]
        value = 1 - len(missing) / len(wanted)
        reason = f"missing {', '.join(map(repr, missing))}" if missing else "contains all"
        return Score(value=value, reason=reason)

    return named("contains", check)


def regex(pattern: str, flags: int = 0) -> Check:
    """1 when the pattern matches somewhere in the answer."""
    compiled = re.compile(pattern, flags)

    def check(case: Case, outcome: Outcome) -> Score:
        if compiled.search(outcome.answer or ""):
            return Score(value=1.0, reason=f"matches /{pattern}/")
        return Score(value=0.0, reason=f"does not match /{pattern}/")

    return named("regex", check)


def json_schema(schema: Mapping[str, Any]) -> Check:
    """1 when the answer is JSON valid against ``schema`` (JSON Schema 2020-12, checked
    by the ``jsonschema`` package: ``pip install 'ratchet[evals]'``)."""
    try:
        import jsonschema
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError("json_schema() needs jsonschema: pip install 'ratchet[evals]'") from e
    validator = jsonschema.Draft202012Validator(dict(schema))
    validator.check_schema(dict(schema))  # a broken schema fails here, not as a 0 score

    def check(case: Case, outcome: Outcome) -> Score:
        try:
            value = json.loads(outcome.answer or "")
        except ValueError as e:
            return Score(value=0.0, reason=f"not JSON: {e}")
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
        if errors:
            first = errors[0]
            where = "$" + "".join(f"[{p!r}]" for p in first.path)
            return Score(value=0.0, reason=f"{where}: {first.message}")
        return Score(value=1.0, reason="valid")

    return named("json_schema", check)


def matches_model(output_type: Any) -> Check:
    """1 when the answer is the JSON of ``output_type`` (a pydantic model, a dataclass...)."""
    adapter: TypeAdapter[Any] = TypeAdapter(output_type)

    def check(case: Case, outcome: Outcome) -> Score:
        try:
            adapter.validate_json(outcome.answer or "")
        except ValidationError as e:
            return Score(value=0.0, reason=f"{e.error_count()} problem(s): {e.errors()[0]['msg']}")
        return Score(value=1.0, reason="valid")

    return named("matches_model", check)


def called(tool: str, **arguments: Any) -> Check:
    """1 when the agent called ``tool`` with (at least) these arguments."""

    def check(case: Case, outcome: Outcome) -> Score:
        for call in outcome.tool_calls:
            if call.name != tool:
                continue
            try:
                args = call.parsed_arguments()
            except ValueError:
                continue
            if all(args.get(k) == v for k, v in arguments.items()):
                return Score(value=1.0, reason=f"called {call.describe()}")
        made = ", ".join(c.describe() for c in outcome.tool_calls) or "no calls"
        return Score(value=0.0, reason=f"no call {tool}({_kwargs(arguments)}); made: {made}")

    return named(f"called_{tool}", check)


def cost_budget(max_usd: float) -> Check:
    """1 when the case cost at most ``max_usd`` (models given a ``price``)."""

    def check(case: Case, outcome: Outcome) -> Score:
        cost = outcome.usage.cost_usd
        ok = cost <= max_usd
        return Score(value=1.0 if ok else 0.0, reason=f"${cost:.6f} of ${max_usd:.6f}")

    return named("cost_budget", check)


def latency_budget(max_seconds: float) -> Check:
    """1 when the case took at most ``max_seconds``."""

    def check(case: Case, outcome: Outcome) -> Score:
        ok = outcome.latency_s <= max_seconds
        reason = f"{outcome.latency_s:.2f} s of {max_seconds:g} s"
        return Score(value=1.0 if ok else 0.0, reason=reason)

    return named("latency_budget", check)


JUDGE_PROMPT = """You grade an assistant's answer against a rubric.

Rubric:
{rubric}

Question:
{question}
{expected}
Answer:
{answer}

Reply with JSON only: {{"score": <a number from 0 to 1>, "reason": "<one sentence>"}}"""


class LLMJudge:
    """A model grades each answer against ``rubric``; its verdicts are cached by case,
    answer and rubric (in memory, and in ``cache_path`` when given), so the same
    answer is never graded twice and a gate does not flicker. Give the model
    temperature 0 (``OpenAIChatModel(..., temperature=0)``)."""

    def __init__(
        self,
        model: ModelClient,
        rubric: str,
        *,
        name: str = "judge",
        cache_path: str | Path | None = None,
    ) -> None:
        self.model = model
        self.rubric = rubric
        self.__name__ = name
        self._path = Path(cache_path) if cache_path is not None else None
        self._cache: dict[str, Score] = {}
        if self._path is not None and self._path.exists():
            raw = json.loads(self._path.read_text())
            self._cache = {k: Score.model_validate(v) for k, v in raw.items()}
        self.calls = 0
        """Model calls made (cache hits make none)."""

    async def __call__(self, case: Case, outcome: Outcome) -> Score:
        key = self._key(case, outcome)
        if key in self._cache:
            return self._cache[key]
        expected = f"\nExpected answer:\n{case.expected}\n" if case.expected else ""
        prompt = JUDGE_PROMPT.format(
            rubric=self.rubric, question=case.prompt, expected=expected, answer=outcome.answer or ""
        )
        self.calls += 1
        response = await self.model.create([Message.user(prompt)], [], RunContext())
        score = _verdict(response.message.text)
        self._cache[key] = score
        if self._path is not None:
            data = {k: v.model_dump() for k, v in self._cache.items()}
            self._path.write_text(json.dumps(data, indent=1, sort_keys=True))
        return score

    def _key(self, case: Case, outcome: Outcome) -> str:
        text = json.dumps([case.id, case.prompt, outcome.answer, self.rubric])
        return hashlib.sha256(text.encode()).hexdigest()[:32]


EVALUATOR_FAILED = "evaluator failed:"
"""How the reason of a score an evaluator raised on starts (``ratchet eval`` warns)."""


async def score_case(case: Case, outcome: Outcome, evaluators: Sequence[Evaluator]) -> CaseScore:
    """Every evaluator's score and their mean weighted by ``case.weights``."""
    scores: dict[str, Score] = {}
    for evaluator in evaluators:
        name = evaluator_name(evaluator)
        if outcome.error is not None:
            scores[name] = Score(value=0.0, reason=f"the run failed: {outcome.error}")
            continue
        try:
            result = evaluator(case, outcome)
            scores[name] = await result if inspect.isawaitable(result) else result
        except Exception as e:  # noqa: BLE001 - one broken evaluator scores 0, says why
            scores[name] = Score(value=0.0, reason=f"{EVALUATOR_FAILED} {type(e).__name__}: {e}")
    weights = {name: case.weights.get(name, 1.0) for name in scores}
    total = sum(weights.values())
    value = sum(s.value * weights[n] for n, s in scores.items()) / total if total else 0.0
    return CaseScore(case_id=case.id, scores=scores, value=value)


def evaluator_name(evaluator: Evaluator) -> str:
    return getattr(evaluator, "__name__", type(evaluator).__name__)


def _verdict(text: str) -> Score:
    match = re.search(r"\{.*\}", text, re.DOTALL)
    try:
        data = json.loads(match.group(0) if match else text)
        value = min(1.0, max(0.0, float(data["score"])))
        return Score(value=value, reason=str(data.get("reason", "")))
    except (ValueError, KeyError, TypeError):
        return Score(value=0.0, reason=f"the judge's reply is not a verdict: {text[:120]!r}")


def _kwargs(arguments: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={json.dumps(v)}" for k, v in arguments.items())
