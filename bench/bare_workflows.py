"""The baseline for the session benchmarks: a bare temporalio workflow whose Update
runs one activity. Kept in a module of its own that imports only temporalio, so
the sandbox re-imports nothing else for it (as for a user's own small workflow)."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

from temporalio import activity, workflow

CALLED: list[asyncio.Queue] = []
"""Where the activity reports when it ran (set by the benchmark)."""


@activity.defn(name="bare.step")
async def bare_step(text: str) -> str:
    if CALLED:
        CALLED[0].put_nowait(time.perf_counter())
    return text


@workflow.defn(name="BareUpdateWorkflow")
class BareUpdateWorkflow:
    """An Update that runs one activity and returns its result; sandboxed, as
    workflows are by default."""

    def __init__(self) -> None:
        self.done = False

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: self.done)

    @workflow.update
    async def send(self, text: str) -> str:
        return await workflow.execute_activity(
            "bare.step", text, start_to_close_timeout=timedelta(seconds=30)
        )

    @workflow.signal
    def close(self) -> None:
        self.done = True


@workflow.defn(name="BareRunWorkflow")
class BareRunWorkflow:
    """A workflow that runs one activity: the baseline for starting a run."""

    @workflow.run
    async def run(self, text: str) -> str:
        return await workflow.execute_activity(
            "bare.step", text, start_to_close_timeout=timedelta(seconds=30)
        )
