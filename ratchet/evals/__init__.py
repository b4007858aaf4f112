"""Evaluations: score what agents answer (``ratchet.evals.evaluators``) case by case.

from ratchet.evals import Case, Outcome, contains, called, score_case
score = await score_case(case, outcome, [contains("Oslo"), called("lookup", city="Oslo")])
"""

from .cases import Case, CaseScore, Outcome, Score
from .evaluators import (
    Evaluator,
    LLMJudge,
    called,
    contains,
    cost_budget,
    exact,
    json_schema,
    latency_budget,
    matches_model,
    regex,
    score_case,
)
from .report import Compared, Report, assert_gate, load_cases
from .runs import compare, run_cases

__all__ = [
    "Case",
    "CaseScore",
    "Compared",
    "Evaluator",
    "LLMJudge",
    "Outcome",
    "Report",
    "Score",
    "assert_gate",
    "called",
    "compare",
    "contains",
    "cost_budget",
    "exact",
    "json_schema",
    "latency_budget",
    "load_cases",
    "matches_model",
    "regex",
    "run_cases",
    "score_case",
]
