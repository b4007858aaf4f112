"""``ratchet deploy status`` against in-process versioned workers (what keeps a build
from draining, what the drain line says about the sessions still on it), and what a
versioned worker process says at start about the routing to its build."""

from __future__ import annotations

import asyncio

from ratchet.client import AgentClient
from ratchet.deploy import BuildStatus, deployment_status, promote
from ratchet.devserver import DevServer
from ratchet.testing import WorkerProcess
from ratchet.worker import build_worker, versioned

from ..conftest import ROOT
from ..deploy_app import AGENTS, WORKFLOWS, Nightly, Reminder
from ..history import until


async def test_deploy_status_counts_what_is_pinned_and_the_sessions_waiting_for_a_person(
    agent_client: AgentClient, task_queue: str
):
    deployment, temporal = task_queue, agent_client.temporal

    def worker(build: str):
        config = versioned(deployment, build)
        return build_worker(agent_client, AGENTS, workflows=WORKFLOWS, deployment_config=config)

    async def build(build_id: str) -> BuildStatus:
        status = await deployment_status(agent_client, deployment)
        return next(b for b in status.builds if b.build_id == build_id)

    async with worker("v1"), worker("v2"):
        await promote(agent_client, deployment, "v1", workflows=WORKFLOWS)
        pinned = await temporal.start_workflow(
            Reminder.run, "pinned", id=f"pinned-{task_queue}", task_queue=task_queue
        )
        moving = await temporal.start_workflow(
            Nightly.run, "moving", id=f"moving-{task_queue}", task_queue=task_queue
        )
        review = await agent_client.start_session("careful")
        await review.submit("fix the bug")
        [asked] = await review.wait_for_pending()
        on_v1 = (
            f'WorkflowId IN ("{pinned.id}", "{moving.id}", "{review.id}") AND '
            f'TemporalWorkerDeploymentVersion="{deployment}:v1" AND '
            'TemporalWorkflowVersioningBehavior IS NOT NULL AND ExecutionStatus="Running"'
        )
        await until(lambda: temporal.count_workflows(on_v1), lambda found: found.count == 3)
        # Before: 2 open runs, the auto-upgrade one (which Temporal's drain status
        # ignores, and which moves at its next step) among them.
        v1 = await until(lambda: build("v1"), lambda b: b.waiting_sessions == 1)
        assert (v1.open_runs, v1.open_sessions) == (1, 1)

        await promote(agent_client, deployment, "v2", workflows=WORKFLOWS)  # wakes review
        status = await deployment_status(agent_client, deployment)
        [drain] = [line for line in status.lines() if line.startswith("build v1 drains")]
        # Before: "... and its 1 session(s) move (next message)", woken or not.
        assert drain == (
            "build v1 drains: keep its workers until its 1 run(s) end and its 1 session(s) "
            "move: one in the middle of a run moves as that run ends; 1 wait(s) for a "
            "person: answer or stop them; an idle one at its next message, or at once when "
            "woken (promote wakes them, unless --no-wake)"
        )
        await review.approve(asked.action.id)
        await until(review.status, lambda s: s.status == "PENDING")
        for handle in (pinned, moving):
            await handle.signal("done")
            await handle.result()


async def test_a_versioned_worker_says_when_its_build_is_not_current(
    temporal_server: DevServer, agent_client: AgentClient, task_queue: str
):
    deployment = task_queue
    promote_v1 = f"`ratchet deploy promote v1 --deployment {deployment} --task-queue {task_queue}`"

    def start(build: str) -> tuple[WorkerProcess, str]:
        env = {"PYTHONPATH": str(ROOT), "RATCHET_DEPLOYMENT": deployment, "RATCHET_BUILD_ID": build}
        worker = WorkerProcess(temporal_server, task_queue, "tests.deploy_app:AGENTS", env=env)
        [line] = [line for line in worker.wait_ready().lines if "worker ready" in line]
        return worker, line.strip()

    # Before: the same line whatever the routing, and a run started now waited silently.
    first, line = await asyncio.to_thread(start, "v1")
    try:
        assert line.endswith(
            f"; build 'v1' is not current and {deployment!r} has no current build: new runs "
            f"and sessions wait, nothing is routed to it until {promote_v1}"
        ), line
        await promote(agent_client, deployment, "v1")
    finally:
        first.stop()
    current, line = await asyncio.to_thread(start, "v1")
    current.stop()
    assert line.endswith("agents: careful, where"), line  # current: nothing to say
    second, line = await asyncio.to_thread(start, "v2")
    second.stop()
    assert line.endswith(
        "; build 'v2' is not current ('v1' is): it serves only the runs pinned to it; new "
        "runs and sessions go to 'v1' until `ratchet deploy promote v2 --deployment "
        f"{deployment} --task-queue {task_queue}`"
    ), line
