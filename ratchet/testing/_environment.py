"""A Temporal dev server for a test, with Ratchet's search attributes, and time
you can skip.

``RatchetTestEnvironment`` starts the ``temporal`` dev server Ratchet ships as a
subprocess on free ports (never ``WorkflowEnvironment.start_local``, which can
abort the interpreter at exit) and connects an ``AgentClient`` on a fresh task
queue. With ``time_skipping=True`` the server runs Temporal's per-workflow time
skipping (``frontend.WorkflowTimeSkippingEnabled``; temporalio's ``TimeSkipper``,
an experimental API) and ``skip(handle, duration)`` moves one workflow's clock:
a 24-hour approval timeout fires in about a second. Time moves only when a test
asks, so a test can still approve before the deadline.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.client import WorkflowHandle
from temporalio.testing import TimeSkipper, TimeSkippingConfig
from temporalio.worker import Worker

from ratchet.client import AgentClient, RunHandle, SessionHandle
from ratchet.devserver import DevServer
from ratchet.errors import ConfigurationError
from ratchet.worker import AgentFactory, build_worker

TIME_SKIPPING_FLAGS = ("--dynamic-config-value", "frontend.WorkflowTimeSkippingEnabled=true")


class RatchetTestEnvironment:
    """A dev server, a client on a fresh task queue, and workers for a test::

    async with await RatchetTestEnvironment.start(time_skipping=True) as env:
        async with env.worker({"billing": billing_agent}):
            handle = await env.client.start_run("billing", "pay acme 500")
            await env.skip(handle, timedelta(hours=24))
    """

    def __init__(self, server: DevServer, client: AgentClient, skipper: TimeSkipper | None) -> None:
        self.server = server
        self.client = client
        """An ``AgentClient`` on this environment's own task queue."""
        self._skipper = skipper

    @classmethod
    async def start(
        cls,
        *,
        time_skipping: bool = False,
        task_queue: str | None = None,
        log_dir: Path | None = None,
    ) -> RatchetTestEnvironment:
        """Start the server (a few seconds) and connect. ``log_dir`` keeps its log."""
        extra = TIME_SKIPPING_FLAGS if time_skipping else ()
        server = DevServer.start(ui=False, log_dir=log_dir, extra_args=extra)
        try:
            client = await AgentClient.connect(
                server.address, task_queue=task_queue or f"test-{uuid.uuid4().hex[:8]}"
            )
            skipper = None
            if time_skipping:
                # Workflows start with skipping off: time moves when the test says so.
                skipper = TimeSkipper(client.temporal, config=TimeSkippingConfig(enabled=False))
                client = AgentClient(skipper.client, task_queue=client.task_queue)
        except BaseException:
            server.stop()
            raise
        return cls(server, client, skipper)

    async def __aenter__(self) -> RatchetTestEnvironment:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.server.stop()

    def worker(self, agents: Mapping[str, AgentFactory], **options: Any) -> Worker:
        """A worker on this environment's task queue (``async with`` it); takes what
        ``build_worker`` takes."""
        return build_worker(self.client, agents, **options)

    async def skip(
        self, handle: RunHandle | SessionHandle | WorkflowHandle[Any, Any], duration: timedelta
    ) -> None:
        """Move the workflow's clock ``duration`` ahead: its timers (approval
        timeouts, ``workflow.sleep``) due by then fire now, in order."""
        if self._skipper is None:
            raise ConfigurationError(
                "This environment does not skip time: start it with "
                "RatchetTestEnvironment.start(time_skipping=True)."
            )
        workflow = handle if isinstance(handle, WorkflowHandle) else handle.workflow
        await self._skipper.fast_forward(workflow, duration)
