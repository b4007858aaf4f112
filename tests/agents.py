"""Agents the tests run, in-process and in worker subprocesses.

They append to the file named by RATCHET_TEST_LOG (read when a factory runs, at
worker start-up) so a test can count model and tool calls across processes.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

from ratchet.agents import (
    Agent,
    Message,
    ModelClient,
    ModelResponse,
    RunContext,
    ScriptedModel,
    Tool,
    ToolCallingAgent,
    tool,
)


class EventLog:
    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path else None

    def write(self, kind: str, **fields: object) -> None:
        if self.path is None:
            return
        record = {"kind": kind, "pid": os.getpid(), "time": time.time(), **fields}
        with self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")

    def read(self) -> list[dict]:
        assert self.path is not None
        return [json.loads(line) for line in self.path.read_text().splitlines() if line]


class LoggingModel(ModelClient):
    """Wraps a model and logs every call with the run, turn and attempt."""

    def __init__(self, inner: ModelClient, log: EventLog) -> None:
        self.inner = inner
        self.log = log

    async def create(
        self, messages: Sequence[Message], tools: Sequence[Tool], context: RunContext
    ) -> ModelResponse:
        self.log.write(
            "model",
            run=context.run_id,
            turn=context.turn,
            attempt=context.attempt,
            messages=len(messages),
        )
        return await self.inner.create(messages, tools, context)


def stepper(log: EventLog, release_dir: Path | None) -> Tool:
    @tool
    async def step(n: int, context: RunContext) -> str:
        """Do step n. Blocks until its release file exists, if releases are used."""
        log.write("tool_start", run=context.run_id, n=n, attempt=context.attempt)
        if release_dir is not None:
            gate = release_dir / f"{context.run_id}-{n}"
            # The gate is a file the test process writes; no in-process event can carry it.
            while not gate.exists():  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        log.write("tool_end", run=context.run_id, n=n)
        return f"step {n} done"

    return step


def steps_agent(steps: int = 3) -> Agent:
    """Calls ``step`` ``steps`` times, one turn each, then answers."""
    log = EventLog(os.environ.get("RATCHET_TEST_LOG"))
    release = os.environ.get("RATCHET_TEST_RELEASE_DIR")
    script = [ScriptedModel.call("step", n=i) for i in range(1, steps + 1)]
    script.append(f"all {steps} steps done")
    return ToolCallingAgent(
        LoggingModel(ScriptedModel(script), log), [stepper(log, Path(release) if release else None)]
    )


AGENTS = {"steps": steps_agent}
