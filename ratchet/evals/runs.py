"""Run cases through the engine: each case is a real run of a registered agent, so an
evaluation measures what users get (retries, tools, approvals policy and all)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from ratchet.activities.histories import read_history
from ratchet.agents.messages import Message
from ratchet.client import AgentClient, RunHandle
from ratchet.errors import RatchetError
from ratchet.wire.options import RunOptions

from .cases import Case, Outcome
from .evaluators import Evaluator, score_case
from .report import Compared, Report

CONCURRENCY = 10
"""Cases run at once by default."""


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
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1.")
    slots = asyncio.Semaphore(concurrency)

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
        Compared(
            case=case,
            old=o,
            new=n,
            old_score=await score_case(case, o, evaluators),
            new_score=await score_case(case, n, evaluators),
        )
        for case, o, n in zip(cases, before, after, strict=True)
    ]
    return Report(agent=new, cases=compared)


async def _run(client: AgentClient, agent: str, case: Case, options: RunOptions | None) -> Outcome:
    started = time.monotonic()
    handle = await client.start_run(agent, case.prompt, options=options)
    try:
        result = await handle.result()
    except RatchetError as e:
        return Outcome(error=f"{type(e).__name__}: {e}", latency_s=time.monotonic() - started)
    latency = time.monotonic() - started
    added = await added_messages(handle)
    calls = [c for m in added if m.role == "assistant" for c in m.tool_calls]
    return Outcome(answer=result.output, tool_calls=calls, usage=result.usage, latency_s=latency)


async def added_messages(handle: RunHandle) -> list[Message]:
    """The messages the run's turns added, read from its history: a query would make a
    worker replay the finished workflow (about as long again as the run itself)."""
    return (await read_history(handle.workflow, follow=False)).added
