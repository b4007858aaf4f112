"""What ``ratchet replay`` prints for a history that does not replay: Ratchet's line
only, not the SDK core's own WARN line in terminal colours as well; and for a query
that matches no open run, the workflow types there are."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest
from temporalio.api.enums.v1 import EventType

from ratchet.cli import main
from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.worker import build_worker

from ..conftest import ROOT
from ..deploy_app import AGENTS, WORKFLOWS, Reminder
from ..history import until


async def test_replay_prints_one_clear_line_per_failing_history_and_no_core_log(
    temporal_server: DevServer, agent_client: AgentClient, task_queue: str
):
    async with build_worker(agent_client, AGENTS, workflows=WORKFLOWS):
        reminder = await agent_client.temporal.start_workflow(
            Reminder.run, "water", id=f"reminder-{task_queue}", task_queue=task_queue
        )
        timer = EventType.EVENT_TYPE_TIMER_STARTED
        await until(reminder.fetch_history, lambda h: any(e.event_type == timer for e in h.events))
        # REMINDER_CHANGED=1: the same workflow without its timer, so the open run fails.
        replay = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "ratchet.cli", "replay", "--task-queue", task_queue,
            "--workflows", "tests.deploy_app:WORKFLOWS",
            cwd=ROOT,
            env={**os.environ, "TEMPORAL_ADDRESS": temporal_server.address,
                 "PYTHONPATH": str(ROOT), "REMINDER_CHANGED": "1"},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(replay.communicate(), 120)
        await reminder.signal(Reminder.done)
        await reminder.result()
    assert replay.returncode == 1, out + err
    # Before, first on stdout (the core writes there): "\x1b[2m2026-...Z\x1b[0m
    # \x1b[33m WARN\x1b[0m ...: Failing workflow task run_id=... failure=Failure { ...".
    first, summary = out.decode().splitlines()
    assert first.startswith(f"reminder-{task_queue} (run ") and "Nondeterminism error" in first
    assert summary == "1 history replayed against this code: 1 do not replay"
    assert b"WARN" not in err and b"\x1b[" not in err, err


def test_a_query_that_matches_no_open_run_names_both_run_types(
    temporal_server: DevServer,
    task_queue: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
):
    # An operator upgrading from 0.1 whose open runs are all AgentRunWorkflow, asking
    # for the type new runs have: the warning names the type their runs do have.
    monkeypatch.setenv("TEMPORAL_ADDRESS", temporal_server.address)
    code = main(["replay", "--task-queue", task_queue, "--query", 'WorkflowType="AgentRun"'])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "no open run matched" in err, err
    assert "AgentRun, AgentRunWorkflow (runs started by 0.1)" in err, err
