"""Run cases through the engine: each case is a real run of a registered agent, so an
evaluation measures what users get (retries, tools, approvals policy and all)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from ratchet.agents import FINAL_RESULT
from ratchet.client import AgentClient, RunHandle
from ratchet.errors import InvalidInputError, RatchetError
from ratchet.history import read_history
from ratchet.types import Message, ToolCall, Usage
from ratchet.wire import RunOptions

from ._cases import Case, Outcome
from ._evaluators import Evaluator
from ._recording import Recording
from ._report import Report, scored

CONCURRENCY = 10
"""Cases run at once by default."""


def slots_for(concurrency: int) -> asyncio.Semaphore:
    """At most ``concurrency`` at once (0 or less would wait for ever: refused)."""
    if concurrency < 1:
        raise InvalidInputError(
            f"concurrency={concurrency}: runs at once must be at least 1 (the default is "
            f"{CONCURRENCY})."
        )
    return asyncio.Semaphore(concurrency)


async def run_cases(
    client: AgentClient,
    agent: str,
    cases: Sequence[Case],
    *,
    options: RunOptions | None = None,
    concurrency: int = CONCURRENCY,
) -> list[Outcome]:
    """Each case as a run of ``agent``, at most ``concurrency`` at once; their outcomes in
    the cases' order. A failed run is an outcome with ``error`` (it scores 0)."""
    slots = slots_for(concurrency)

    async def one(case: Case) -> Outcome:
        async with slots:
            return await _run(client, agent, case, options)

    return list(await asyncio.gather(*(one(c) for c in cases)))


async def compare(
    client: AgentClient,
    cases: Sequence[Case],
    *,
    old: str,
    new: str,
    evaluators: Sequence[Evaluator],
    options: RunOptions | None = None,
    concurrency: int = CONCURRENCY,
) -> Report:
    """Run every case on agent ``old`` and on agent ``new``; score both with the same
    evaluators; the report shows them side by side."""
    before = await run_cases(client, old, cases, options=options, concurrency=concurrency)
    after = await run_cases(client, new, cases, options=options, concurrency=concurrency)
    compared = [
        await scored(case, o, n, evaluators)
        for case, o, n in zip(cases, before, after, strict=True)
    ]
    return Report(agent=new, cases=compared)


async def _run(client: AgentClient, agent: str, case: Case, options: RunOptions | None) -> Outcome:
    return await run_once(client, agent, case.prompt, options)


async def run_once(
    client: AgentClient,
    agent: str,
    prompt: str | Sequence[Message],
    options: RunOptions | None,
    recording: Recording | None = None,
) -> Outcome:
    """Run ``agent`` on ``prompt`` and say what it did (a failed run: ``error``)."""
    started = time.monotonic()
    handle = await client.start_run(agent, prompt, options=options)
    try:
        result = await handle.result()
    except RatchetError as e:
        return Outcome(error=f"{type(e).__name__}: {e}", latency_s=time.monotonic() - started)
    latency = time.monotonic() - started
    added = await added_messages(handle)
    return outcome_of(result.output, result.usage, latency, added, recording)


async def added_messages(handle: RunHandle) -> list[Message]:
    """The messages the run's turns added, read from its history: a query would make a
    worker replay the finished workflow (about as long again as the run itself)."""
    return (await read_history(handle.workflow, follow=False)).added


def outcome_of(
    answer: str, usage: Usage, latency: float, added: list[Message], recording: Recording | None
) -> Outcome:
    """What a finished run did; with a rerun's ``recording``, which calls ran live."""
    calls = [c for m in added if m.role == "assistant" for c in m.tool_calls]
    results = {m.tool_call_id: m for m in added if m.role == "tool" and m.tool_call_id}
    live = [c.describe() for c in calls if recording and _ran_live(c, results.get(c.id), recording)]
    return Outcome(answer=answer, tool_calls=calls, usage=usage, latency_s=latency, live_calls=live)


def _ran_live(call: ToolCall, result: Message | None, recording: Recording) -> bool:
    """Whether ``call`` ran for real: not answered from the recording, and neither
    refused, denied nor rejected (those results say it was not run)."""
    if call.name == FINAL_RESULT or recording.unrecorded == "refuse" or recording.holds(call):
        return False
    return result is not None and not (result.is_error and "not run" in result.text.lower())
