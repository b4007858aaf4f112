"""What a worker prints of the Temporal SDK core's own log: its warnings come through
Python's logging, in the worker's format, not on stderr in terminal colours."""

from __future__ import annotations

import logging

import pytest

from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.telemetry import CORE_LOGGER, worker_runtime
from ratchet.testing import WorkerProcess
from ratchet.worker import build_worker

from ..conftest import ROOT
from ..deploy_app import AGENTS, WORKFLOWS, Reminder
from ..history import until


@pytest.mark.slow  # a worker process
async def test_a_core_warning_is_a_log_record_in_the_workers_format(
    temporal_server: DevServer, agent_client: AgentClient, task_queue: str
):
    async with build_worker(agent_client, AGENTS, workflows=WORKFLOWS):
        reminder = await agent_client.temporal.start_workflow(
            Reminder.run, "water", id=f"reminder-{task_queue}", task_queue=task_queue
        )
        await until(reminder.fetch_history, lambda h: len(h.events) >= 5)  # its timer started
    # A build whose workflow changed without workflow.patched: the core warns that the
    # run's next workflow task fails (nondeterminism).
    changed = WorkerProcess(
        temporal_server,
        task_queue,
        "tests.deploy_app:AGENTS",
        "--workflows",
        "tests.deploy_app:WORKFLOWS",
        env={"REMINDER_CHANGED": "1", "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    try:
        changed.wait_ready()
        await reminder.signal(Reminder.done)
        changed.wait_for("Failing workflow task")
        (line,) = [line for line in changed.lines if "Failing workflow task" in line][:1]
        assert f" WARNING {CORE_LOGGER}: [sdk_core::" in line, line  # the worker's format
        assert "\x1b[" not in changed.output  # no terminal colours
    finally:
        changed.stop()
        await reminder.terminate("test over")


def test_a_query_answered_after_it_expired_is_not_a_warning(caplog: pytest.LogCaptureFixture):
    # Seen after `ratchet run`: the core answered a query the server no longer held (its
    # caller had gone); nothing for an operator to do.
    worker_runtime()  # puts the filter on the core's logger
    core = logging.getLogger(CORE_LOGGER)
    with caplog.at_level(logging.WARNING, logger=CORE_LOGGER):
        core.warning("[sdk_core::worker] Query not found when attempting to respond to it")
        core.warning("[sdk_core::worker] Failing workflow task")
    assert [r.getMessage() for r in caplog.records] == ["[sdk_core::worker] Failing workflow task"]
    with caplog.at_level(logging.INFO, logger=CORE_LOGGER):
        core.warning("[sdk_core::worker] Query not found when attempting to respond to it")
    assert len(caplog.records) == 2  # shown from INFO on
