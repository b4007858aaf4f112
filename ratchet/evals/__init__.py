"""Evaluations: score what agents answer (``ratchet.evals.evaluators``) case by case,
and rerun recorded sessions on a changed agent (``start_rerun``; the workers need
``EvalsPlugin``).

    from ratchet.evals import Case, Outcome, contains, called, score_case
    score = await score_case(case, outcome, [contains("Oslo"), called("lookup", city="Oslo")])

    rerun = await start_rerun(client, session_ids, agent="support-v2")
    report = await rerun.report([contains("refund")])
"""

from .batch import Rerun, get_rerun, start_rerun
from .case_runs import compare, run_cases
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
from .worker_plugin import EvalsPlugin

__all__ = [
    "Case",
    "CaseScore",
    "Compared",
    "EvalsPlugin",
    "Evaluator",
    "LLMJudge",
    "Outcome",
    "Report",
    "Rerun",
    "Score",
    "assert_gate",
    "called",
    "compare",
    "contains",
    "cost_budget",
    "exact",
    "get_rerun",
    "json_schema",
    "latency_budget",
    "load_cases",
    "matches_model",
    "regex",
    "run_cases",
    "score_case",
    "start_rerun",
]
