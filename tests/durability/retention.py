"""A dev server whose namespaces may keep closed runs for seconds, as Temporal's
retention does for days: its server deletes them itself. And the reader that checks,
in a process of its own (a fresh client, worker and caches), what a session kept.

    python -m tests.durability.retention ADDRESS NAMESPACE TASK_QUEUE SESSION_ID [SEND]

prints the session's thread (texts and gaps) and, with SEND, the answer to it, as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from datetime import timedelta

from google.protobuf.duration_pb2 import Duration
from temporalio.api.workflowservice.v1 import (
    DescribeNamespaceRequest,
    RegisterNamespaceRequest,
)
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from ratchet.client import AgentClient
from ratchet.client._namespace_setup import ensure_search_attributes
from ratchet.devserver import DevServer
from ratchet.process import hard_exit
from ratchet.worker import build_worker

SHORT_RETENTION = [
    "--dynamic-config-value",
    'system.namespaceMinRetentionLocal="1s"',
    "--dynamic-config-value",
    'history.retentionTimerJitterDuration="1s"',
]
"""Without these the dev server keeps closed runs an hour at least."""


def start_server() -> DevServer:
    return DevServer.start(ui=False, extra_args=SHORT_RETENTION)


async def namespace_with_retention(server: DevServer, retention: timedelta) -> str:
    """A new namespace keeping closed runs ``retention``, with Ratchet's attributes."""
    name = f"retention-{uuid.uuid4().hex[:8]}"
    client = await Client.connect(server.address)
    await client.workflow_service.register_namespace(
        RegisterNamespaceRequest(
            namespace=name,
            workflow_execution_retention_period=Duration(seconds=int(retention.total_seconds())),
        )
    )
    for _ in range(200):  # registered namespaces reach the frontend's cache shortly
        try:
            await client.workflow_service.describe_namespace(
                DescribeNamespaceRequest(namespace=name)
            )
            break
        except RPCError as e:
            if e.status != RPCStatusCode.NOT_FOUND:
                raise
            await asyncio.sleep(0.05)
    await ensure_search_attributes(await Client.connect(server.address, namespace=name))
    return name


async def gone(client: Client, workflow_id: str, run_id: str) -> bool:
    try:
        await client.get_workflow_handle(workflow_id, run_id=run_id).describe()
    except RPCError as e:
        if e.status == RPCStatusCode.NOT_FOUND:
            return True
        raise
    return False


async def wait_until_gone(client: Client, workflow_id: str, run_ids: list[str], within: float):
    """Until Temporal answers NOT_FOUND for every run (its deletion is asynchronous)."""
    loop = asyncio.get_running_loop()
    until = loop.time() + within
    for run_id in run_ids:
        while not await gone(client, workflow_id, run_id):
            assert loop.time() < until, f"run {run_id} of {workflow_id} still there"
            await asyncio.sleep(0.2)


async def check(address: str, namespace: str, task_queue: str, session_id: str, send: str | None):
    from ..workflows.test_sessions import Echo

    client = await AgentClient.connect(address, namespace=namespace, task_queue=task_queue)
    session = client.get_session(session_id)
    async with build_worker(client, {"echo": Echo}):  # an open session answers by query
        thread = await session.thread()
        found: dict = {
            "texts": [m.text for m in thread.messages],
            "gaps": [g.model_dump(mode="json") for g in thread.gaps],
        }
        if send is not None:
            found["answer"] = (await session.send(send)).output
    print(json.dumps(found))


if __name__ == "__main__":
    address, namespace, task_queue, session_id, *send = sys.argv[1:]
    asyncio.run(check(address, namespace, task_queue, session_id, send[0] if send else None))
    hard_exit(0)
