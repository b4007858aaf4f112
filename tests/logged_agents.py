"""Agents the tests run, in-process and in worker subprocesses.

They append to the file named by RATCHET_TEST_LOG (read when a factory runs, at
worker start-up) so a test can count model and tool calls across processes.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel
from temporalio import activity

from ratchet.agents import (
    Agent,
    ModelClient,
    ModelResponse,
    OpenAIChatModel,
    RunContext,
    ScriptedModel,
    Tool,
    ToolCallingAgent,
    tool,
)
from ratchet.errors import ModelError
from ratchet.types import Message


def pair_agent() -> Agent:
    """Calls ``step`` twice in one turn (in parallel), then answers."""
    log = EventLog(os.environ.get("RATCHET_TEST_LOG"))
    release = os.environ.get("RATCHET_TEST_RELEASE_DIR")
    script = [ScriptedModel.calls(("step", {"n": 1}), ("step", {"n": 2})), "both steps done"]
    return ToolCallingAgent(
        LoggingModel(ScriptedModel(script), log), [stepper(log, Path(release) if release else None)]
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


class TimedModel(ModelClient):
    """A model that takes ``latency`` seconds (from the run's plan, the first user
    message as JSON) and, like a real one, returns fresh call ids every time. Logs
    ``model_start`` and ``model_end``. With ``hold`` in the plan, attempt 1 waits for
    the release file ``<run>-model`` before answering on turn 1."""

    def __init__(self, inner: ModelClient, log: EventLog, release_dir: Path | None) -> None:
        self.inner = inner
        self.log = log
        self.release_dir = release_dir

    async def create(
        self, messages: Sequence[Message], tools: Sequence[Tool], context: RunContext
    ) -> ModelResponse:
        plan = json.loads(messages[0].text)
        fields = {"run": context.run_id, "turn": context.turn, "attempt": context.attempt}
        self.log.write("model_start", **fields)
        try:
            if plan.get("latency"):  # 0: the reply comes without a pause, as a cached one
                await asyncio.sleep(plan["latency"])
            held = plan.get("hold") and context.turn == context.attempt == 1
            if held and self.release_dir is not None:
                gate = self.release_dir / f"{context.run_id}-model"
                while not gate.exists():  # noqa: ASYNC110 - written by the test process
                    await asyncio.sleep(0.02)
        except asyncio.CancelledError:
            self.log.write("model_cancelled", **fields)
            raise
        response = await self.inner.create(messages, tools, context)
        calls = [
            c.model_copy(update={"id": f"call_{uuid.uuid4().hex[:12]}"})
            for c in response.message.tool_calls
        ]
        response.message.tool_calls = calls
        self.log.write("model_end", **fields)
        return response


CRASH_SAYS = "Working on it now."
"""The text the ``crash`` agent's first model call streams (word by word) before its call."""


def crash_agent() -> Agent:
    """One model call, which streams ``CRASH_SAYS`` and calls ``work``, which SIGKILLs
    its own worker ``kill_after`` seconds in (once per run, when ``kill_after`` is set
    in the plan); then answers."""
    log = EventLog(os.environ.get("RATCHET_TEST_LOG"))
    release = os.environ.get("RATCHET_TEST_RELEASE_DIR")
    release_dir = Path(release) if release else None

    def script(messages: Sequence[Message], context: RunContext) -> str | Message:
        if any(m.role == "tool" for m in messages):
            return "worked"
        plan = json.loads(messages[0].text)
        call = ScriptedModel.call("work", kill_after=plan.get("kill_after"))
        return Message.assistant(CRASH_SAYS, call.tool_calls)

    @tool
    async def work(kill_after: float | None, context: RunContext) -> str:
        """Work; maybe crash the worker partway."""
        fields = {"run": context.run_id, "attempt": context.attempt, "call": context.call_id}
        log.write("tool_start", key=context.idempotency_key(), **fields)
        marker = release_dir / f"{context.run_id}-killed" if release_dir else None
        if kill_after is not None and marker is not None and not marker.exists():
            marker.touch()
            await asyncio.sleep(kill_after)
            log.write("kill", **fields)
            os.kill(os.getpid(), signal.SIGKILL)
        log.write("tool_end", **fields)
        return "done"

    model = ScriptedModel(script, stream=True)
    return ToolCallingAgent(TimedModel(model, log, release_dir), [work])


def thinker_agent() -> Agent:
    """One model call that takes ``seconds`` (in the prompt's plan) and answers; the
    first attempt of a run SIGKILLs its own worker ``kill_after`` seconds into it. The
    retry's call takes ``retry_seconds`` when the plan gives it (a CI test need not
    wait out a second long call), else ``seconds``."""
    log = EventLog(os.environ.get("RATCHET_TEST_LOG"))
    release = os.environ.get("RATCHET_TEST_RELEASE_DIR")
    release_dir = Path(release) if release else None

    class Thinking(ModelClient):
        async def create(
            self, messages: Sequence[Message], tools: Sequence[Tool], context: RunContext
        ) -> ModelResponse:
            plan = json.loads(messages[0].text)
            # Did an earlier attempt's heartbeat reach the server?
            heard = bool(activity.info().heartbeat_details)
            log.write("model", run=context.run_id, attempt=context.attempt, heard=heard)
            marker = release_dir / f"{context.run_id}-killed" if release_dir else None
            if marker is not None and not marker.exists():
                marker.touch()
                await asyncio.sleep(plan["kill_after"])  # the call's latency so far
                log.write("kill", run=context.run_id)
                os.kill(os.getpid(), signal.SIGKILL)
            retry = context.attempt > 1 and "retry_seconds" in plan
            await asyncio.sleep(plan["retry_seconds"] if retry else plan["seconds"])
            return await ScriptedModel(["thought"]).create(messages, tools, context)

    return ToolCallingAgent(Thinking(), [])


class Invoice(BaseModel):
    customer: str
    total_eur: float


def invoice_agent() -> Agent:
    """A typed answer (``output_type``): ``ratchet run --json`` prints its value."""
    answer = ScriptedModel.call("final_result", customer="acme", total_eur=120.5)
    return ToolCallingAgent(ScriptedModel([answer]), output_type=Invoice)


def noter(gated: bool) -> Agent:
    """Calls ``note`` with the latest user message, then answers. Gated (a changed
    agent, for rerun batches), its answering call logs ``gated_start``, waits for the
    release file ``<run>-answer`` (``/`` in the run id as ``~``) and logs
    ``gated_end``."""
    log = EventLog(os.environ.get("RATCHET_TEST_LOG"))
    release = os.environ.get("RATCHET_TEST_RELEASE_DIR")

    @tool
    def note(text: str) -> str:
        """Note something down."""
        log.write("note_ran", text=text)
        return f"noted {text}"

    def script(messages: Sequence[Message], context: RunContext) -> str | Message:
        last = max(i for i, m in enumerate(messages) if m.role == "user")
        results = [m for m in messages[last:] if m.role == "tool"]
        if not results:
            return ScriptedModel.call("note", text=messages[last].text)
        return f"{'v2' if gated else 'v1'}: {results[0].text}"

    class Gated(ModelClient):
        async def create(
            self, messages: Sequence[Message], tools: Sequence[Tool], context: RunContext
        ) -> ModelResponse:
            answering = messages[-1].role == "tool"
            if gated and answering and release:
                log.write("gated_start", run=context.run_id, attempt=context.attempt)
                gate = Path(release) / f"{context.run_id.replace('/', '~')}-answer"
                while not gate.exists():  # noqa: ASYNC110 - written by the test process
                    await asyncio.sleep(0.02)
                log.write("gated_end", run=context.run_id)
            return await ScriptedModel(script).create(messages, tools, context)

    return ToolCallingAgent(Gated(), [note])


def chaos_agent() -> Agent:
    """For each user message: a model call (0-0.4 s) that asks for ``effect`` with
    the message's text, the tool (0.3 s, logging ``effect`` with its idempotency
    key), then an answer ``done: <text>``. A message run twice shows as two keys."""
    log = EventLog(os.environ.get("RATCHET_TEST_LOG"))

    def script(messages: Sequence[Message], context: RunContext) -> str | Message:
        last = max(i for i, m in enumerate(messages) if m.role == "user")
        if any(m.role == "tool" for m in messages[last:]):
            return f"done: {messages[last].text}"
        return ScriptedModel.call("effect", text=messages[last].text)

    class Latent(ModelClient):
        async def create(
            self, messages: Sequence[Message], tools: Sequence[Tool], context: RunContext
        ) -> ModelResponse:
            await asyncio.sleep(len(messages) * 7 % 5 / 10)
            return await ScriptedModel(script).create(messages, tools, context)

    @tool
    async def effect(text: str, context: RunContext) -> str:
        """Do the message's side effect."""
        await asyncio.sleep(0.3)
        log.write("effect", text=text, key=context.idempotency_key(), run=context.run_id)
        return f"did {text}"

    return ToolCallingAgent(Latent(), [effect])


def quick_agent() -> Agent:
    """Answers at once, logging the call: a turn's start, for the rate-limit tests."""
    log = EventLog(os.environ.get("RATCHET_TEST_LOG"))
    return ToolCallingAgent(LoggingModel(ScriptedModel(["done"]), log))


def throttled_agent() -> Agent:
    """Throttled by its provider (429) at each turn's first attempt, then answers."""

    def reply(messages: Sequence[Message], context: RunContext) -> str:
        if context.attempt == 1:
            raise ModelError("429 slow down", retryable=True, status=429, retry_after=0.05)
        return "done"

    return ToolCallingAgent(ScriptedModel(reply))


def openai_agent() -> Agent:
    """One call to the OpenAI-compatible server at ``OPENAI_BASE_URL`` (a stub)."""
    return ToolCallingAgent(OpenAIChatModel("gpt-4o-mini"))


AGENTS = {
    "openai": openai_agent,
    "chaos": chaos_agent,
    "throttled": throttled_agent,
    "quick": quick_agent,
    "steps": steps_agent,
    "pair": pair_agent,
    "crash": crash_agent,
    "thinker": thinker_agent,
    "invoice": invoice_agent,
    "noter": lambda: noter(gated=False),
    "noter-v2": lambda: noter(gated=True),
}
