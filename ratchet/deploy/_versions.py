"""Which build serves what, and moving traffic to a new one (Temporal's worker
deployments; ``ratchet deploy status|promote``).

A worker started with ``--deployment NAME --build-id ID`` serves one build
(version) of a worker deployment. ``promote`` makes a build the current one after
the replay gate passes: new runs and sessions start on it, runs in flight finish
on the build that started them, and each open session moves to it at its next
message boundary (``promote`` wakes the idle ones so they move now and the old
build can drain).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from temporalio.api.enums.v1 import (
    RoutingConfigUpdateState,
    TaskQueueType,
    WorkerDeploymentVersionStatus,
)
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import (
    DescribeTaskQueueRequest,
    DescribeWorkerDeploymentRequest,
    SetWorkerDeploymentCurrentVersionRequest,
    SetWorkerDeploymentRampingVersionRequest,
)
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from ratchet.client import AgentClient
from ratchet.errors import InvalidInputError
from ratchet.types import AgentStatus
from ratchet.wire import MOVE_SIGNAL, SESSION_WORKFLOW

from ._replay import ReplayReport, replay_open

ROUTING_WAIT = 30.0
"""How long ``promote`` waits for the new routing to reach the task queues before it
wakes the idle sessions (a session woken earlier would not see the change)."""
IDENTITY = "ratchet deploy"
POLLED_WITHIN = 75.0
"""Seconds since a live worker last polled: an idle one polls again within about 60
(so a worker stopped less than this ago still counts)."""
TAKEN_OVER = (
    '(TemporalWorkflowVersioningBehavior IS NULL OR TemporalWorkflowVersioningBehavior != "Pinned")'
)
PINNED = 'TemporalWorkflowVersioningBehavior="Pinned"'
WAITING = "AgentStatus IN ({})".format(
    ", ".join(f'"{s.value}"' for s in AgentStatus if s.value.startswith("AWAITING_"))
)
REGISTER_WAIT = 10.0


@dataclass(frozen=True)
class BuildStatus:
    build_id: str
    status: str
    """current, ramping, draining, drained or inactive (Temporal's words)."""
    open_runs: int
    """Open runs pinned to the build (auto-upgrade ones move at their next step)."""
    open_sessions: int
    waiting_sessions: int = 0
    """Sessions on the build whose run in progress waits for a person."""


@dataclass(frozen=True)
class DeploymentStatus:
    deployment: str
    current: str | None
    ramping: str | None
    ramp_percentage: float
    builds: list[BuildStatus] = field(default_factory=list)

    def lines(self) -> list[str]:
        ramp = f", ramping: {self.ramping} at {self.ramp_percentage:g}%" if self.ramping else ""
        out = [f"deployment {self.deployment}: current build {self.current or '(none)'}{ramp}"]
        out.append(f"{'build':<24} {'status':<9} {'open runs':>9} {'sessions':>8}")
        for b in self.builds:
            out.append(f"{b.build_id:<24} {b.status:<9} {b.open_runs:>9} {b.open_sessions:>8}")
        for b in self.builds:
            if b.status == "draining" and (b.open_runs or b.open_sessions):
                out.append(_drain_line(b))
        return out


def _drain_line(b: BuildStatus) -> str:
    line = f"build {b.build_id} drains: keep its workers until its {b.open_runs} run(s) end"
    if not b.open_sessions:
        return line
    waiting = (
        f"; {b.waiting_sessions} wait(s) for a person: answer or stop them"
        if b.waiting_sessions
        else ""
    )
    return (
        f"{line} and its {b.open_sessions} session(s) move: one in the middle of a run "
        f"moves as that run ends{waiting}; an idle one at its next message, or at once "
        "when woken (promote wakes them, unless --no-wake)"
    )


@dataclass(frozen=True)
class PromoteResult:
    gate: ReplayReport
    promoted: bool
    sessions_woken: int = 0


async def deployment_status(client: AgentClient | Client, deployment: str) -> DeploymentStatus:
    """Each build of ``deployment`` with its status and its open runs and sessions."""
    temporal = _temporal(client)
    info = (await _describe(temporal, deployment)).worker_deployment_info
    routing = info.routing_config
    builds = []
    for summary in sorted(info.version_summaries, key=lambda s: s.create_time.ToDatetime()):
        build = summary.deployment_version.build_id
        # Only pinned runs keep a build: Temporal's drain status counts no others.
        open_query = (
            f'ExecutionStatus="Running" AND TemporalWorkerDeploymentVersion="{deployment}:{build}"'
            f" AND {PINNED}"
        )
        sessions = f'{open_query} AND WorkflowType="{SESSION_WORKFLOW}"'
        total = (await temporal.count_workflows(open_query)).count
        in_sessions = (await temporal.count_workflows(sessions)).count
        waiting = (await temporal.count_workflows(f"{sessions} AND {WAITING}")).count
        builds.append(
            BuildStatus(
                build_id=build,
                status=_status_name(summary.status),
                open_runs=total - in_sessions,
                open_sessions=in_sessions,
                waiting_sessions=waiting,
            )
        )
    return DeploymentStatus(
        deployment=deployment,
        current=routing.current_deployment_version.build_id or None,
        ramping=routing.ramping_deployment_version.build_id or None,
        ramp_percentage=routing.ramping_version_percentage,
        builds=builds,
    )


async def promote(
    client: AgentClient | Client,
    deployment: str,
    build_id: str,
    *,
    workflows: Sequence[type] = (),
    query: str | None = None,
    ramp: float | None = None,
    wake_sessions: bool = True,
    force: bool = False,
) -> PromoteResult:
    """Run the replay gate (``replay_open`` with ``workflows`` and ``query``) on the
    open runs the build would take over (the unpinned ones); if they all replay, make
    ``build_id`` the current build of ``deployment`` (or, with ``ramp``, send that
    percentage of new runs to it), then wake the sessions on other builds so they
    move to it. Run it from the new build's code: the gate replays against the code
    it runs in. Refuses a build that no worker polls on the client's task queue
    (``force`` skips that check)."""
    if ramp is not None and not 0 <= ramp <= 100:
        raise InvalidInputError(f"ramp={ramp:g}: give a percentage from 0 to 100.")
    temporal = _temporal(client)
    if isinstance(client, AgentClient) and not force:
        await _check_polled(temporal, client.task_queue, deployment, build_id)
    # Pinned runs never run on another build: the gate replays the runs the new build
    # would take over (auto-upgrade ones, and runs started before versioning).
    unpinned = f"{TAKEN_OVER}{f' AND ({query})' if query else ''}"
    gate = await replay_open(client, query=unpinned, workflows=workflows)
    if not gate.ok:
        return PromoteResult(gate=gate, promoted=False)
    await _route(temporal, deployment, build_id, ramp)
    woken = 0
    if wake_sessions and ramp is None:
        await _routing_settled(temporal, deployment)
        woken = await _wake_sessions(temporal, deployment, build_id)
    return PromoteResult(gate=gate, promoted=True, sessions_woken=woken)


async def _check_polled(temporal: Client, task_queue: str, deployment: str, build: str) -> None:
    """Refuse a build no live worker serves: new runs and moving sessions would wait.
    A worker that just started may not have polled yet: asked for ``REGISTER_WAIT``."""
    request = DescribeTaskQueueRequest(
        namespace=temporal.namespace,
        task_queue=TaskQueue(name=task_queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    )
    deadline = time.monotonic() + REGISTER_WAIT
    while True:
        answer = await temporal.workflow_service.describe_task_queue(request)
        now = time.time()
        for poller in answer.pollers:
            options = poller.deployment_options
            recent = now - poller.last_access_time.ToSeconds() <= POLLED_WITHIN
            if (options.deployment_name, options.build_id) == (deployment, build) and recent:
                return
        if time.monotonic() > deadline:
            break
        await asyncio.sleep(0.5)
    raise InvalidInputError(
        f"No worker of build {build!r} of {deployment!r} has polled task queue "
        f"{task_queue!r} in the last {POLLED_WITHIN:g} s: new runs and sessions would "
        f"wait for one. Start it first (ratchet worker --deployment {deployment} "
        f"--build-id {build} --task-queue {task_queue}), or pass --force."
    )


async def _route(temporal: Client, deployment: str, build_id: str, ramp: float | None) -> None:
    """Set the current (or ramping) build. A worker that just started may not have
    registered its build yet: retried for ``REGISTER_WAIT``."""
    service, namespace = temporal.workflow_service, temporal.namespace
    deadline = time.monotonic() + REGISTER_WAIT
    while True:
        try:
            if ramp is None:
                await service.set_worker_deployment_current_version(
                    SetWorkerDeploymentCurrentVersionRequest(
                        namespace=namespace,
                        deployment_name=deployment,
                        build_id=build_id,
                        identity=IDENTITY,
                    )
                )
            else:
                await service.set_worker_deployment_ramping_version(
                    SetWorkerDeploymentRampingVersionRequest(
                        namespace=namespace,
                        deployment_name=deployment,
                        build_id=build_id,
                        percentage=ramp,
                        identity=IDENTITY,
                    )
                )
            return
        except RPCError as e:
            unregistered = e.status in (
                RPCStatusCode.NOT_FOUND,
                RPCStatusCode.FAILED_PRECONDITION,
            )
            if not unregistered or time.monotonic() > deadline:
                raise _refused(e, deployment, build_id) from None
        await asyncio.sleep(0.5)


async def _wake_sessions(temporal: Client, deployment: str, build_id: str) -> int:
    """Signal each open session of ``deployment`` still on another build: it moves
    to the current one at once if idle, else after its run in progress."""
    query = (
        f'ExecutionStatus="Running" AND WorkflowType="{SESSION_WORKFLOW}" '
        f'AND TemporalWorkerDeployment="{deployment}" '
        f'AND TemporalWorkerDeploymentVersion!="{deployment}:{build_id}"'
    )
    woken = 0
    async for execution in temporal.list_workflows(query):
        try:
            await temporal.get_workflow_handle(execution.id).signal(MOVE_SIGNAL)
            woken += 1
        except RPCError as e:  # closed meanwhile
            if e.status != RPCStatusCode.NOT_FOUND:
                raise
    return woken


async def _routing_settled(temporal: Client, deployment: str) -> None:
    deadline = time.monotonic() + ROUTING_WAIT
    completed = RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_COMPLETED
    while time.monotonic() < deadline:
        info = (await _describe(temporal, deployment)).worker_deployment_info
        if info.routing_config_update_state == completed:
            return
        await asyncio.sleep(0.2)


async def _describe(temporal: Client, deployment: str):
    try:
        return await temporal.workflow_service.describe_worker_deployment(
            DescribeWorkerDeploymentRequest(
                namespace=temporal.namespace, deployment_name=deployment
            )
        )
    except RPCError as e:
        if e.status != RPCStatusCode.NOT_FOUND:
            raise
        raise InvalidInputError(
            f"There is no worker deployment {deployment!r}: start a worker with "
            f"ratchet worker --deployment {deployment} --build-id ID first."
        ) from None


def _refused(error: RPCError, deployment: str, build_id: str) -> InvalidInputError:
    hint = ""
    if error.status == RPCStatusCode.NOT_FOUND:
        hint = f" (is a worker with --deployment {deployment} --build-id {build_id} running?)"
    return InvalidInputError(
        f"Temporal did not route to {build_id!r} in {deployment!r}: {error.message}{hint}"
    )


def _status_name(status: WorkerDeploymentVersionStatus.ValueType) -> str:
    name = WorkerDeploymentVersionStatus.Name(status)
    return name.removeprefix("WORKER_DEPLOYMENT_VERSION_STATUS_").lower()


def _temporal(client: AgentClient | Client) -> Client:
    return client.temporal if isinstance(client, AgentClient) else client
