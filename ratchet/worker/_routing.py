"""What a versioned worker is told at start about the builds Temporal routes to: a
build that is not current gets no new runs, and nothing says so otherwise."""

from __future__ import annotations

from temporalio.api.workflowservice.v1 import DescribeWorkerDeploymentRequest
from temporalio.client import Client
from temporalio.common import WorkerDeploymentVersion
from temporalio.service import RPCError


async def routing_note(temporal: Client, version: WorkerDeploymentVersion, task_queue: str) -> str:
    """Why new runs do not reach this build, and the command that routes them; ``""``
    when it is current (or the deployment cannot be read: the worker runs anyway)."""
    build, deployment = version.build_id, version.deployment_name
    request = DescribeWorkerDeploymentRequest(
        namespace=temporal.namespace, deployment_name=deployment
    )
    try:
        routing = (
            await temporal.workflow_service.describe_worker_deployment(request)
        ).worker_deployment_info.routing_config
        current = routing.current_deployment_version.build_id or None
        ramping = routing.ramping_deployment_version.build_id or None
        percentage = routing.ramping_version_percentage
    except RPCError:  # a first build: the deployment is made when its workers poll
        current, ramping, percentage = None, None, 0.0
    if current == build:
        return ""
    promote = (
        f"`ratchet deploy promote {build} --deployment {deployment} --task-queue {task_queue}`"
    )
    if ramping == build:
        return (
            f"build {build!r} is ramping: it takes {percentage:g}% of new runs; {promote} "
            "makes it current"
        )
    if current is None:
        return (
            f"build {build!r} is not current and {deployment!r} has no current build: new "
            f"runs and sessions wait, nothing is routed to it until {promote}"
        )
    return (
        f"build {build!r} is not current ({current!r} is): it serves only the runs pinned "
        f"to it; new runs and sessions go to {current!r} until {promote}"
    )
