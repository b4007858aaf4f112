"""Evaluations: score what agents answer (``ratchet.evals._evaluators``) case by case,
and rerun recorded sessions on a changed agent (``start_rerun``; the workers need
``EvalsPlugin``).

    from ratchet.evals import Case, Outcome, contains, called, score_case
    score = await score_case(case, outcome, [contains("Oslo"), called("lookup", city="Oslo")])

    rerun = await start_rerun(client, session_ids, agent="support-v2")
    report = await rerun.report([contains("refund")])
"""

from ._batch import Rerun, RerunBatch, Source, get_rerun, start_rerun
from ._batch_workflow import RerunBatchWorkflow
from ._case_runs import compare, run_cases
from ._cases import Case, CaseScore, Outcome, Score
from ._datasets import Dataset, Snapshot, export_dataset, load_dataset
from ._evaluators import (
    EVALUATOR_FAILED,
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
from ._report import Compared, Report, assert_gate, load_cases
from ._rerun import find_sources, rerun_many
from ._rerun_types import MAX_CONCURRENCY, BatchProgress, BatchResult
from ._worker_plugin import EvalsPlugin

__all__ = [
    "BatchProgress",
    "BatchResult",
    "Case",
    "CaseScore",
    "Compared",
    "Dataset",
    "EVALUATOR_FAILED",
    "EvalsPlugin",
    "Evaluator",
    "LLMJudge",
    "MAX_CONCURRENCY",
    "Outcome",
    "Report",
    "Rerun",
    "RerunBatch",
    "RerunBatchWorkflow",
    "Score",
    "Snapshot",
    "Source",
    "assert_gate",
    "called",
    "compare",
    "contains",
    "cost_budget",
    "exact",
    "export_dataset",
    "find_sources",
    "get_rerun",
    "json_schema",
    "latency_budget",
    "load_cases",
    "load_dataset",
    "matches_model",
    "regex",
    "rerun_many",
    "run_cases",
    "score_case",
    "start_rerun",
]
