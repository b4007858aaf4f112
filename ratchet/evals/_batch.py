"""Durable reruns: recorded sessions rerun on a changed agent, as Temporal workflows.

    rerun = await start_rerun(client, sources, agent="support-v2")
    report = await rerun.report([contains("refund")])   # waits for it

A rerun is one ``RerunBatch`` workflow (``batch_workflow``) that fans the cases
out as child runs, at most 50 at once, and continues as new every 500 cases: a
worker killed mid-rerun costs no finished case, and a client that dies can come
back for the report with ``get_rerun``. A source is a session or run id, or a
dataset's snapshot (``ratchet.evals._datasets``), which travels in the batch's
input: snapshots that weigh more than one input carries are split, in order, over
several batches, which share the concurrency and make one report.
(``ratchet.evals._rerun.rerun_many`` reruns from the calling process instead: each
case is a durable run, but the rerun is not.)
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Sequence
from typing import Any

from temporalio.client import WorkflowHandle

from ratchet.client import AgentClient
from ratchet.errors import InvalidInputError
from ratchet.history import activity_results, read_history
from ratchet.types import Message
from ratchet.wire import RunOptions

from ._case_runs import CONCURRENCY, outcome_of
from ._cases import Case, Outcome
from ._evaluators import Evaluator
from ._recording import Approvals, Recording, Unrecorded
from ._report import Compared, Report, scored
from ._rerun import rerun_notes
from ._rerun_types import (
    CASES_PER_RUN,
    INLINE_BYTES,
    MAX_RECORD_BYTES,
    MAX_SNAPSHOT_BYTES,
    MAX_SOURCE_HISTORY_BYTES,
    PLAN_ACTIVITY,
    PLAN_BYTES,
    RERUN_BATCH_WORKFLOW,
    BatchInput,
    BatchOptions,
    BatchProgress,
    BatchResult,
    CasePlan,
    CaseRecord,
    SourcePlan,
    SourceSnapshot,
)

READERS = 20
"""Sources and finished runs read at once while a report is built."""


class RerunBatch:
    """A batch's workflow, and the report it makes once finished."""

    def __init__(self, client: AgentClient, handle: WorkflowHandle[Any, BatchResult]) -> None:
        self.client = client
        self.handle = handle

    @property
    def id(self) -> str:
        return self.handle.id

    async def progress(self) -> BatchProgress:
        return await self.handle.query("progress", result_type=BatchProgress)

    async def running(self) -> list[str]:
        """The ids of the runs answering cases right now."""
        return await self.handle.query("running", result_type=list[str])

    async def result(self) -> BatchResult:
        """Wait for the batch (across its continue-as-new) and list its cases."""
        return await self.handle.result()

    async def report(self, evaluators: Sequence[Evaluator] = ()) -> Report:
        """Wait for the batch, then compare each case's recorded and new outcome,
        scored by ``evaluators``, in batch order. Everything is read from histories
        (the batch's plans hold the recorded side), so no worker replays a source."""
        result = await self.result()
        plans = {
            case.id: case
            for plan in await activity_results(self.handle, PLAN_ACTIVITY, SourcePlan)
            for case in plan.cases
        }
        slots = asyncio.Semaphore(READERS)

        async def compare(record: CaseRecord) -> Compared:
            plan = plans.get(record.id)
            if plan is None:  # its source could not be read
                return await _unreadable(record)
            case = Case(id=record.id, prompt=plan.prompt, metadata={"source": record.source})
            async with slots:
                new = await self._outcome(record, plan, result.policy)
            return await scored(case, Outcome(**plan.old.model_dump()), new, evaluators)

        cases = await asyncio.gather(*(compare(r) for r in result.records))
        return Report(agent=result.agent, cases=list(cases), notes=rerun_notes(cases))

    async def _outcome(self, record: CaseRecord, plan: CasePlan, policy: Recording) -> Outcome:
        if record.error is not None or record.workflow_id is None:
            return Outcome(error=record.error, latency_s=record.latency_s)
        run = self.client.get_run(record.workflow_id)
        read = await read_history(run.workflow, run_result=True)  # one read for both
        if read.result is None:
            error = f"{record.workflow_id} did not complete"
            return Outcome(error=error, latency_s=record.latency_s)
        added = read.added
        recording = policy.model_copy(update={"calls": plan.recording.calls})
        return outcome_of(read.result.output, read.result.usage, record.latency_s, added, recording)


Source = str | SourceSnapshot
"""A session or run id, or a dataset's snapshot of one."""


async def start_batch(
    client: AgentClient,
    sources: Sequence[Source],
    *,
    agent: str,
    unrecorded: Unrecorded = "refuse",
    approvals: Approvals = "recorded",
    options: RunOptions | None = None,
    concurrency: int = CONCURRENCY,
    cases_per_run: int = CASES_PER_RUN,
    inline_bytes: int = INLINE_BYTES,
    free_running: bool = False,
    batch_id: str | None = None,
) -> RerunBatch:
    """One batch of ``start_rerun`` (its arguments), whose snapshots weigh at most
    ``MAX_SNAPSHOT_BYTES`` in all."""
    if not sources:
        raise InvalidInputError("A batch needs at least one source: session or run ids.")
    unique = _unique(sources)
    snapshots = [s for s in unique if not isinstance(s, str)]
    size = sum(_carriable(s, free_running) for s in snapshots)
    if len(snapshots) > 1 and size > MAX_SNAPSHOT_BYTES:
        raise InvalidInputError(
            f"These snapshots weigh {size // 1024} KiB; a batch's input carries at most "
            f"{MAX_SNAPSHOT_BYTES // 1024} KiB of them: start_rerun splits them over batches."
        )
    batch = BatchOptions(
        concurrency=concurrency, cases_per_run=cases_per_run, inline_bytes=inline_bytes
    )
    batch_id = batch_id or f"rerun-{agent}-{uuid.uuid4().hex[:8]}"
    handle = await client.temporal.start_workflow(
        RERUN_BATCH_WORKFLOW,
        BatchInput(
            agent=agent,
            sources=[_name(s) for s in unique],
            snapshots=snapshots,
            batch_id=batch_id,
            options=options or RunOptions(),
            policy=Recording(unrecorded=unrecorded, approvals=approvals),
            free_running=free_running,
            batch=batch,
        ),
        id=batch_id,
        task_queue=client.task_queue,
        result_type=BatchResult,
        static_summary=f"rerun of {len(unique)} recorded sessions on {agent}",
    )
    return RerunBatch(client, handle)


class Rerun:
    """A durable rerun: its batch, or its batches when its snapshots weigh more than one
    batch's input carries (``MAX_SNAPSHOT_BYTES``), in source order."""

    def __init__(self, batches: Sequence[RerunBatch]) -> None:
        if not batches:
            raise InvalidInputError("A rerun has at least one batch (Rerun.ids).")
        self.batches = list(batches)

    @property
    def ids(self) -> list[str]:
        """Its batches' workflow ids (``get_rerun`` takes them)."""
        return [batch.id for batch in self.batches]

    async def progress(self) -> list[BatchProgress]:
        """Each batch's progress, in order."""
        return list(await asyncio.gather(*(b.progress() for b in self.batches)))

    async def running(self) -> list[str]:
        """The ids of the runs answering cases right now, in every batch."""
        return [run for b in self.batches for run in await b.running()]

    async def report(self, evaluators: Sequence[Evaluator] = ()) -> Report:
        """Wait for every batch, then one report of all their cases, in source order:
        each case's recorded and new outcome, scored by ``evaluators``."""
        reports = await asyncio.gather(*(b.report(evaluators) for b in self.batches))
        cases = [case for report in reports for case in report.cases]
        return Report(agent=reports[0].agent, cases=cases, notes=rerun_notes(cases))


async def start_rerun(
    client: AgentClient,
    sources: Sequence[Source],
    *,
    agent: str,
    unrecorded: Unrecorded = "refuse",
    approvals: Approvals = "recorded",
    options: RunOptions | None = None,
    concurrency: int = CONCURRENCY,
    free_running: bool = False,
    cases_per_run: int = CASES_PER_RUN,
    inline_bytes: int = INLINE_BYTES,
    rerun_id: str | None = None,
) -> Rerun:
    """Start a durable rerun of every user message of each source (a session or run
    id, or a dataset's snapshot) on ``agent``; returns at once.

    Teacher-forced by default: each case runs ``agent`` on the recorded conversation
    up to its message; ``free_running``: each source's messages in order, the new
    answers carried forward. A tool call that matches a recorded one gets the recorded
    result; any other follows ``unrecorded`` (``refuse``, ``live`` or ``ask``).
    ``approvals="policy"`` lets ``agent``'s approval rules decide recorded calls too.
    At most ``concurrency`` cases run at once. Snapshots that weigh more than one
    batch's input carries are split over several batches sharing ``concurrency``
    (each runs at least one case at a time); the workers need ``EvalsPlugin``."""
    BatchOptions(concurrency=concurrency).check()  # before it is shared out
    groups = _split(sources, free_running)
    rerun_id = rerun_id or f"rerun-{agent}-{uuid.uuid4().hex[:8]}"
    ids = (
        [rerun_id]
        if len(groups) == 1
        else [f"{rerun_id}-{k}of{len(groups)}" for k in range(1, len(groups) + 1)]
    )
    share = max(1, concurrency // len(groups))
    batches = [
        await start_batch(
            client,
            group,
            agent=agent,
            unrecorded=unrecorded,
            approvals=approvals,
            options=options,
            concurrency=share,
            cases_per_run=cases_per_run,
            inline_bytes=inline_bytes,
            free_running=free_running,
            batch_id=id,
        )
        for id, group in zip(ids, groups, strict=True)
    ]
    return Rerun(batches)


def get_rerun(client: AgentClient, ids: str | Sequence[str]) -> Rerun:
    """A rerun started earlier (by this process or another), by its batch id or ids
    (``Rerun.ids``)."""
    ids = [ids] if isinstance(ids, str) else list(ids)
    if not ids:
        raise InvalidInputError("get_rerun needs a rerun's batch id (Rerun.ids).")
    handles = [client.temporal.get_workflow_handle(i, result_type=BatchResult) for i in ids]
    return Rerun([RerunBatch(client, handle) for handle in handles])


def _split(sources: Sequence[Source], free_running: bool) -> list[list[Source]]:
    """Sources in groups whose snapshots weigh at most ``MAX_SNAPSHOT_BYTES`` (one
    heavier snapshot alone in its group, up to what a batch can carry)."""
    groups: list[list[Source]] = [[]]
    weight = 0
    for source in _unique(sources):
        size = 0 if isinstance(source, str) else _carriable(source, free_running)
        if groups[-1] and size and weight + size > MAX_SNAPSHOT_BYTES:
            groups.append([])
            weight = 0
        groups[-1].append(source)
        weight += size
    return groups


def _name(source: Source) -> str:
    return source if isinstance(source, str) else source.source


def _unique(sources: Sequence[Source]) -> list[Source]:
    """The first source of each name (an id or a snapshot), in order."""
    first: dict[str, Source] = {}
    for source in sources:
        first.setdefault(_name(source), source)
    return list(first.values())


def _carriable(snapshot: SourceSnapshot, free_running: bool) -> int:
    """The snapshot's weight, if a batch can carry it and plan its cases."""
    size = len(snapshot.model_dump_json())
    if size > MAX_RECORD_BYTES:
        raise InvalidInputError(
            f"The snapshot of {snapshot.source} weighs {size // 1024} KiB, more than a batch "
            f"can carry ({MAX_RECORD_BYTES // 1024} KiB): rerun it with rerun_many from this "
            "process (a conversation over 2 MB needs payload_storage on the client)."
        )
    # A case's input is written twice (in its plan, and in its run's start): the
    # conversation up to its message, or (free-running) its message and every recorded
    # call. Each page of the plan carries the snapshot in its request.
    sizes = [len(m.model_dump_json()) for m in snapshot.messages]
    users = [n for n, m in enumerate(snapshot.messages) if m.role == "user"]
    if free_running:
        calls = sum(s for s, m in zip(sizes, snapshot.messages, strict=True) if _is_call(m))
        inline = sum(sizes[n] + calls for n in users)
    else:
        before = list(itertools.accumulate(sizes))
        inline = sum(before[n] for n in users)
    cost = 2 * inline + (inline // PLAN_BYTES + 1) * size
    if cost > MAX_SOURCE_HISTORY_BYTES:
        raise InvalidInputError(
            f"The snapshot of {snapshot.source} is too long to rerun in a batch: its cases "
            f"would write about {cost // 2**20} MB to the batch's history (at most "
            f"{MAX_SOURCE_HISTORY_BYTES // 2**20} MB). Rerun it with rerun_many from this "
            "process, or, while its session is within retention, by id (its cases then "
            "refer to the session's log instead of copying it)."
        )
    return size


def _is_call(message: Message) -> bool:
    return message.role == "tool" or bool(message.tool_calls)


async def _unreadable(record: CaseRecord) -> Compared:
    case = Case(id=record.id, prompt="", metadata={"source": record.source, "unreadable": True})
    failed = Outcome(error=record.error)
    return await scored(case, failed, failed, ())
