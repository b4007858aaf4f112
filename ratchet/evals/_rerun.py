"""Rerun a recorded session (or run) against a changed agent.

Each user message of the source is a case. Teacher-forced (the default), a case runs
the new agent on the recorded conversation up to that message, old answers
included; free-running, one new session carries the new agent's own answers forward.
Tool calls go through Ratchet's tool path and are answered from the recording when
they match a recorded call (same tool, canonical-JSON-equal arguments), with no side
effect repeated; other calls are refused (``unrecorded="refuse"``, the model is told)
or run (``"live"``, and the outcome lists them). Agents that call services outside
their tools cannot be intercepted: those calls run live. Approvals recorded in the
source are reused (a recorded call is answered without asking).

("Rerun", not "replay": replay is Temporal's deterministic re-execution.)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from temporalio.service import RPCError, RPCStatusCode

from ratchet.client import AgentClient
from ratchet.errors import InvalidInputError, NotFoundError, RatchetError
from ratchet.history import recorded_turns, usage_per_user_message
from ratchet.types import Message, Usage
from ratchet.wire import SESSION_WORKFLOW, RunOptions, SessionOptions

from ._case_runs import CONCURRENCY, outcome_of, run_once, slots_for
from ._cases import Case, Outcome
from ._evaluators import Evaluator
from ._recording import (
    Approvals,
    Recording,
    Unrecorded,
    case_id,
    recorded_calls,
    user_turns,
)
from ._report import Compared, Report, scored
from ._rerun_types import RecordedSide, replaying


class Snapshot(Protocol):
    """A source exported earlier (``ratchet.evals._datasets.Snapshot``)."""

    source: str

    def cases(self) -> list[RecordedCase]: ...


@dataclass
class RecordedCase:
    """A user message of the source, what came before it, and what the agent did."""

    case: Case
    before: list[Message]
    prompt: Message
    after: list[Message]
    """The recorded run's messages: tool calls, results, the answer."""
    usage: Usage = field(default_factory=Usage)
    """What the recorded turns cost (from the source's history)."""
    latency_s: float = 0.0
    """From the first recorded turn's start to the last one's end."""

    def old_outcome(self) -> Outcome:
        recorded = RecordedSide.of(self.after, self.usage, self.latency_s)
        return Outcome(**recorded.model_dump())


def split_cases(source: str, messages: Sequence[Message]) -> list[RecordedCase]:
    """One case per user message: the conversation before it, and the run it started."""
    messages = list(messages)
    cases: list[RecordedCase] = []
    for n, (start, end) in enumerate(user_turns(messages)):
        prompt = messages[start]
        case = Case(id=case_id(source, n + 1), prompt=prompt.text)
        cases.append(RecordedCase(case, messages[:start], prompt, messages[start + 1 : end]))
    return cases


async def read_source(client: AgentClient, source: str) -> list[Message]:
    """The whole thread of a session, or of a run, by its id (NotFoundError when
    Temporal has no such workflow)."""
    try:
        description = await client.temporal.get_workflow_handle(source).describe()
    except RPCError as e:
        if e.status != RPCStatusCode.NOT_FOUND:
            raise
        raise NotFoundError(
            f"There is no session or run {source!r}: a wrong id, or one past the namespace's "
            "retention. Snapshot conversations while Temporal holds them (`ratchet eval "
            "export`, or export_dataset()) and rerun the dataset."
        ) from None
    if description.workflow_type == SESSION_WORKFLOW:
        return list((await client.get_session(source).thread()).messages)
    return list((await client.get_run(source).thread()).messages)


async def read_recorded(
    client: AgentClient, source: str, messages: list[Message] | None = None
) -> list[RecordedCase]:
    """The cases of ``source`` with what its recorded turns cost and took, read from its
    history."""
    messages = messages if messages is not None else await read_source(client, source)
    cases = split_cases(source, messages)
    turns = await recorded_turns(client.temporal.get_workflow_handle(source))
    for case, (usage, latency) in zip(cases, usage_per_user_message(messages, turns), strict=True):
        case.usage, case.latency_s = usage, latency
    return cases


async def find_sources(client: AgentClient, query: str, *, limit: int = 100) -> list[str]:
    """Ids of the sessions and runs a visibility query finds, newest first, e.g.
    ``AgentName = "support" AND AgentStatus = "COMPLETED" AND StartTime > "2026-11-01"``."""
    rows = await client.list_sessions(runs=True, query=query, limit=limit)
    return [row.id for row in rows]


async def rerun(client: AgentClient, source: str, *, agent: str, **options: Any) -> Report:
    """Rerun every user message of session (or run) ``source`` on ``agent`` (see
    ``rerun_many`` for the options). Raises ``NotFoundError`` when Temporal no longer
    holds ``source``: rerun a dataset snapshot of it instead (``export_dataset``)."""
    return await rerun_many(client, [source], agent=agent, **options)


async def rerun_many(
    client: AgentClient,
    sources: Sequence[str | Snapshot],
    *,
    agent: str,
    evaluators: Sequence[Evaluator] = (),
    unrecorded: Unrecorded = "refuse",
    approvals: Approvals = "recorded",
    free_running: bool = False,
    options: RunOptions | None = None,
    concurrency: int = CONCURRENCY,
) -> Report:
    """Rerun every user message of each source (an id, or a dataset's ``Snapshot``) on
    ``agent``, at most ``concurrency``
    runs (free-running: sessions) at once; score the recorded and the new answers
    with ``evaluators``; one report compares them, case by case, in source order."""
    slots = slots_for(concurrency)
    policy = Recording(unrecorded=unrecorded, approvals=approvals)

    async def read(source: str | Snapshot) -> list[RecordedCase]:
        if not isinstance(source, str):
            found = source.cases()
        else:
            async with slots:
                found = await read_recorded(client, source)
        if not found:
            name = source if isinstance(source, str) else source.source
            raise InvalidInputError(f"{name} holds no user message to rerun.")
        return found

    per_source = list(await asyncio.gather(*(read(s) for s in sources)))
    base = options or RunOptions()

    async def forced(case: RecordedCase) -> Outcome:
        async with slots:
            return await _teacher_forced(client, agent, case, base, policy)

    async def free(cases: list[RecordedCase]) -> list[Outcome]:
        async with slots:
            return await _free_running(client, agent, cases, base, policy)

    if free_running:
        runs = await asyncio.gather(*(free(cases) for cases in per_source))
        outcomes = [o for run in runs for o in run]
    else:
        outcomes = list(await asyncio.gather(*(forced(c) for cs in per_source for c in cs)))
    recorded = [c for cases in per_source for c in cases]
    compared = [
        await side_by_side(case, new, evaluators)
        for case, new in zip(recorded, outcomes, strict=True)
    ]
    return Report(agent=agent, cases=compared, notes=rerun_notes(compared))


async def side_by_side(
    case: RecordedCase, new: Outcome, evaluators: Sequence[Evaluator]
) -> Compared:
    """The recorded and the new outcome of ``case``, scored by the same evaluators."""
    return await scored(case.case, case.old_outcome(), new, evaluators)


async def _teacher_forced(
    client: AgentClient,
    agent: str,
    case: RecordedCase,
    options: RunOptions,
    policy: Recording,
) -> Outcome:
    recording = policy.model_copy(update={"calls": recorded_calls(case.after)})
    run_options = replaying(options, recording)
    prompt = [_fresh(m) for m in [*case.before, case.prompt]]
    return await run_once(client, agent, prompt, run_options, recording)


async def _free_running(
    client: AgentClient,
    agent: str,
    cases: list[RecordedCase],
    options: RunOptions,
    policy: Recording,
) -> list[Outcome]:
    every = [c for case in cases for c in recorded_calls(case.after)]
    recording = policy.model_copy(update={"calls": every})
    run = replaying(options, recording)
    session = await client.start_session(agent, options=SessionOptions(run=run))
    outcomes: list[Outcome] = []
    end = 0  # where the session's thread ends: each case reads only what its send added
    try:
        for case in cases:
            started = time.monotonic()
            try:
                result = await session.send([_fresh(case.prompt)])
            except RatchetError as e:
                latency = time.monotonic() - started
                outcomes.append(Outcome(error=f"{type(e).__name__}: {e}", latency_s=latency))
                end = (await session.thread(last=0)).offset
                continue
            latency = time.monotonic() - started
            sent = await session.thread(after=end)
            end = sent.length
            added = sent.messages[1:]  # after the prompt
            outcomes.append(outcome_of(result.output, result.usage, latency, added, recording))
    finally:
        await session.close()
    return outcomes


NOT_INTERCEPTED = (
    "A rerun answers the calls an agent makes through its tools; anything it calls "
    "directly (a service, outside its tools) is not intercepted and ran for real."
)


def rerun_notes(cases: Sequence[Compared]) -> list[str]:
    live = sum(len(c.new.live_calls) for c in cases)
    ran = [f"{live} tool calls not in the recording ran live (listed per case)."] if live else []
    return [NOT_INTERCEPTED, *ran]


def _fresh(message: Message) -> Message:
    """A copy for a new run (which gives it a new id)."""
    return message.model_copy(update={"id": ""})
