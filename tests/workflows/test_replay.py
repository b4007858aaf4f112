"""Recorded histories must replay against today's workflow code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from ratchet.deploy import load_history, replay
from ratchet.examples.orchestration import FanOut, WriterCriticLoop
from ratchet.wire import RunInput, RunResult
from ratchet.worker import workflow_runner

from ..conftest import ROOT
from ..user_workflows import ForeignToken, ResearchAndReview, SharedPlan

RECORDED = Path(__file__).parents[1] / "histories"
RELEASES = sorted(p for p in RECORDED.iterdir() if p.is_dir() and p.name.startswith("release-"))
"""Histories recorded with each release: they never change, and always replay."""
HISTORIES = sorted(RECORDED.glob("*.json")) + [
    h for r in RELEASES for h in sorted(r.glob("*.json"))
]


def load(path: Path) -> WorkflowHistory:
    return WorkflowHistory.from_json(path.stem, path.read_text())


def replayer(*workflows: type) -> Replayer:
    return Replayer(
        workflows=list(workflows),
        data_converter=pydantic_data_converter,
        workflow_runner=workflow_runner(),
    )


def test_histories_are_recorded():
    assert {p.stem for p in RECORDED.glob("*.json")} >= {
        "agent_run_completed",
        "agent_run_max_turns",
        "agent_run_summarize_then_continue_as_new",
        "agent_run_continued",
        "agent_run_fit_window",
        "agent_run_fast_mode",
        "agent_run_fast_mode_pages_in_as_an_activity",
        "agent_run_with_state",
        "agent_run_approve_reject_answer",
        "agent_run_with_sub_agent",
        "agent_run_indexed_with_events",
        "agent_run_indexed_continued",
        "agent_run_indexed_at_the_old_interval",
        "agent_run_indexed_once_at_its_end",
        "agent_session_answer_in_the_update",
        "agent_session_failed_runs_spend_budget",
        "agent_run_rule_change_decides_a_waiting_call",
        "agent_run_on_a_service_thread",
        "agent_session_two_sends_then_closed",
        "agent_session_stopped_mid_run",
        "agent_session_compaction_and_failure",
        "agent_session_continued_by_reference",
        "agent_session_fast_mode",
        "agent_session_waiting_for_approval",
        "agent_session_interrupted",
        "agent_session_approval_rules",
        "agent_session_client_tool",
        "agent_session_retried_request_id",
        "agent_session_forked",
        "agent_session_forked_from_a_run",
        "agent_session_moved_to_a_new_build",
        "agent_session_closed_after_continue_as_new_on_a_fresh_worker",
        "agent_session_reanchored_by_its_timer",
        "agent_session_reanchored_when_asked",
        "agent_session_fork_reanchored",
        "agent_run_reanchored_while_waiting",
        "agent_run_with_fairness_key",
        "agent_session_with_fairness_key",
        "scheduled_send_delivered",
        "scheduled_send_to_a_closed_session",
        "scheduled_send_with_capped_attempts",
        "research_and_review",
        "shared_plan_with_conflict",
        "writer_critic_loop",
        "fan_out",
        "rerun_batch_continued_as_new",
        "rerun_batch_finished",
        "rerun_case_on_a_session_log",
        "rerun_batch_free_running",
        "rerun_batch_of_snapshots",
        "agent_run_type_approve_reject",
        "agent_run_type_owned_with_sub_agent",
        "agent_run_type_sub_agent",
        "agent_run_type_continued",
        "agent_run_type_started_after_continue",
        "agent_session_sub_agent_as_agent_run",
        "rerun_batch_cases_as_agent_run",
    }


def _name(path: Path) -> str:
    return path.stem if path.parent == RECORDED else f"{path.parent.name}/{path.stem}"


def test_each_release_kept_a_history_of_every_kind():
    assert [r.name for r in RELEASES] >= ["release-0.1.0"]
    current = {p.stem for p in RECORDED.glob("*.json")}
    for release in RELEASES:
        # A workflow kind recorded at a release is still recorded today (a newer
        # kind may have none in an older release).
        assert {p.stem for p in release.glob("*.json")} <= current, release.name


USER_WORKFLOWS = [ResearchAndReview, SharedPlan, ForeignToken, WriterCriticLoop, FanOut]


@pytest.mark.parametrize("path", HISTORIES, ids=_name)
async def test_recorded_history_replays_without_nondeterminism(path: Path):
    """Through the replay gate (``ratchet.deploy.replay``), as ``ratchet replay`` does."""
    report = await replay([load_history(path)], workflows=USER_WORKFLOWS)
    assert report.replayed == 1
    assert report.ok, report.lines()


@workflow.defn(name="AgentRunWorkflow", sandboxed=False)
class AgentRunWorkflowThatSkipsTurns:
    """A changed workflow: it answers without running any turn activity."""

    @workflow.run
    async def run(self, input: RunInput) -> RunResult:
        raise RuntimeError("not reached")


async def test_a_changed_workflow_fails_replay():
    history = load(RECORDED / "agent_run_completed.json")
    result = await replayer(AgentRunWorkflowThatSkipsTurns).replay_workflow(
        history, raise_on_replay_failure=False
    )
    assert result.replay_failure is not None


@pytest.mark.slow  # a child process
def test_ratchets_workflows_replay_inside_the_sandbox_too():
    # They run outside temporalio's sandbox (ratchet.workflows._sandbox); replaying every
    # recorded history inside it still catches a call the sandbox forbids (the clock,
    # random numbers, I/O) in their code.
    code = (
        "import sys, pytest; "
        "from ratchet.workflows import AgentRun, AgentRunWorkflow, AgentSessionWorkflow; "
        "from ratchet.evals._batch_workflow import RerunBatchWorkflow; "
        "defs = [w.__temporal_workflow_definition for w in "  # type: ignore[attr-defined]
        "(AgentRun, AgentRunWorkflow, AgentSessionWorkflow, RerunBatchWorkflow)]; "
        "assert all(d.sandboxed for d in defs), 'not sandboxed'; "
        "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', "
        "'tests/workflows/test_replay.py', '-k', 'replays_without_nondeterminism']))"
    )
    env = {**os.environ, "RATCHET_WORKFLOW_SANDBOX": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"{len(HISTORIES)} passed" in done.stdout, done.stdout[-3000:]
