"""RerunBatchWorkflow: a rerun of many recorded sessions, durable as a whole.

It plans each source with an activity (``ratchet.evals._plan_activity``) and
answers each case with a child ``AgentRun``, at most ``concurrency`` at
once. Each case's record (the child's id, or why it failed) is in its history, so
a worker killed mid-batch costs nothing finished: the batch replays and waits for
the children it had started. Every ``cases_per_run`` cases it drains and
continues as new, carrying only the records and where it was.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from ratchet.errors import UsageError
    from ratchet.wire import RunResult
    from ratchet.workflows import SANDBOXED

    from ._batch_cases import (
        Snapshots,
        answer_case,
        batch_full,
        cause_of,
        following,
        not_followed,
    )
    from ._rerun_types import (
        MAX_CASES,
        MAX_RECORD_BYTES,
        PLAN_ACTIVITY,
        RERUN_BATCH_WORKFLOW,
        BatchInput,
        BatchProgress,
        BatchResult,
        CasePlan,
        CaseRecord,
        PlanRequest,
        SourcePlan,
        child_id,
        short,
    )

PLAN_TIMEOUT = timedelta(minutes=5)
PLAN_RETRIES = RetryPolicy(maximum_attempts=5)
PLANS_AHEAD = 8
"""Sources being planned at once, ahead of the cases being started."""
START_BYTES = 1024 * 1024
"""Inline cases started before waiting for the server to take their starts: what one
workflow task sends stays well under Temporal's 4 MB limit."""


@workflow.defn(name=RERUN_BATCH_WORKFLOW, failure_exception_types=[UsageError], sandboxed=SANDBOXED)
class RerunBatchWorkflow:
    """Reruns every user message of ``sources`` on ``agent`` as child runs."""

    @workflow.init
    def __init__(self, input: BatchInput) -> None:
        self._input = input
        self._records = list(input.records)
        self._source = input.next_source
        self._running: set[str] = set()
        """The child runs in flight."""
        self._positions = len(input.records)
        """Cases (and unreadable sources) given a place in the batch so far."""
        self._carried = sum(len(r.model_dump_json()) for r in input.records)
        """About the bytes of ``_records``: what continue-as-new and the result carry."""
        self._snapshots = Snapshots(input.sources, input.snapshots)
        self._unstarted = 0
        """Cases whose run's start the server has not yet taken."""

    @workflow.run
    async def run(self, input: BatchInput) -> BatchResult:
        input.options.check()
        input.batch.check()
        slots = asyncio.Semaphore(input.batch.concurrency)
        tasks: list[asyncio.Task[None]] = []
        plans: dict[int, asyncio.Task[SourcePlan]] = {}
        started, next_case, inline = 0, input.next_case, 0
        while self._source < len(input.sources):
            if started and self._history_full():  # between sources (plans made ahead are redone)
                await asyncio.gather(*tasks)
                self._continue_as_new(0)
            source = input.sources[self._source]
            self._plan_ahead(plans, next_case)
            first = await plans.pop(self._source)
            cases, error = await self._cases(source, first)
            if error is not None:
                self._unreadable(source, error)
            elif input.free_running and cases:  # one chain per source: a new one can wait
                if started >= input.batch.cases_per_run:
                    await asyncio.gather(*tasks)
                    self._continue_as_new(0)
                await slots.acquire()
                chain = self._in_order(cases, source, self._positions, slots)
                tasks.append(asyncio.create_task(chain))
                self._positions += len(cases)
                started += len(cases)
            for n, case in enumerate([] if input.free_running else cases, start=first.start):
                if started >= input.batch.cases_per_run:
                    await asyncio.gather(*tasks)
                    self._continue_as_new(n)
                await slots.acquire()
                self._positions += 1
                self._unstarted += 1
                tasks.append(asyncio.create_task(self._one(case, source, self._positions, slots)))
                started += 1
                if self._snapshots.of(source) is not None:  # its conversation is inline
                    inline += len(case.model_dump_json())
                    if inline > START_BYTES:
                        await workflow.wait_condition(lambda: self._unstarted == 0)
                        inline = 0
            self._source, next_case = self._source + 1, 0
            self._show()
        await asyncio.gather(*tasks)
        self._records.sort(key=lambda r: r.position)
        self._show()
        return BatchResult(agent=input.agent, policy=input.policy, records=self._records)

    @workflow.query
    def progress(self) -> BatchProgress:
        return BatchProgress(
            sources=len(self._input.sources),
            sources_started=self._source,
            cases_done=len(self._records),
            cases_failed=sum(1 for r in self._records if r.error is not None),
            running=len(self._running),
        )

    @workflow.query
    def records(self) -> list[CaseRecord]:
        """The cases finished so far (across continue-as-new), in batch order."""
        return sorted(self._records, key=lambda r: r.position)

    @workflow.query
    def running(self) -> list[str]:
        """The ids of the cases' runs in flight (a person may have calls to decide)."""
        return sorted(self._running)

    def _plan_ahead(self, plans: dict[int, asyncio.Task[SourcePlan]], next_case: int) -> None:
        """Plan the next few sources while the cases before them run: reading a
        source takes a worker a replay of it, which would otherwise hold up the fan-out."""
        sources = self._input.sources
        for k in range(self._source, min(self._source + PLANS_AHEAD, len(sources))):
            if k not in plans:
                start = next_case if k == self._source else 0
                plans[k] = asyncio.create_task(self._plan(sources[k], start))

    async def _plan(self, source: str, start: int) -> SourcePlan:
        request = PlanRequest(
            source=source,
            agent=self._input.agent,
            batch_id=self._batch_id(),
            thread_kind=self._input.options.thread_kind,
            inline_bytes=self._input.batch.inline_bytes,
            start=start,
            free_running=self._input.free_running,
            snapshot=self._snapshots.of(source),
        )
        try:
            return await workflow.execute_activity(
                PLAN_ACTIVITY,
                request,
                result_type=SourcePlan,
                start_to_close_timeout=PLAN_TIMEOUT,
                retry_policy=PLAN_RETRIES,
                summary=f"plan {source}",
            )
        except ActivityError as e:
            return SourcePlan(source=source, error=f"Could not plan {source}: {cause_of(e)}")

    def _unreadable(self, source: str, error: str) -> None:
        self._positions += 1
        self._record(
            CaseRecord(id=source, source=source, position=self._positions, error=short(error))
        )

    async def _cases(self, source: str, first: SourcePlan) -> tuple[list[CasePlan], str | None]:
        """Every case of ``source`` from ``first`` on (the plan comes in pages)."""
        carried = self._carried + self._snapshots.bytes_from(self._source)
        if self._positions >= MAX_CASES or carried > MAX_RECORD_BYTES:
            return [], batch_full(source)
        cases, plan = list(first.cases), first
        while plan.error is None and plan.start + len(plan.cases) < plan.total:
            plan = await self._plan(source, plan.start + len(plan.cases))
            cases += plan.cases
        return cases, plan.error

    async def _one(
        self, case: CasePlan, source: str, position: int, slots: asyncio.Semaphore
    ) -> None:
        await self._run_case(case, source, position, self._started)
        slots.release()

    def _started(self) -> None:
        self._unstarted -= 1

    async def _in_order(
        self, cases: list[CasePlan], source: str, position: int, slots: asyncio.Semaphore
    ) -> None:
        """Free-running: each case continues the thread of the run before it (the
        cases take the places after ``position``)."""
        previous: tuple[str, RunResult] | None = None  # the case before, and its run
        failed: str | None = None  # the case the rest cannot follow
        for n, case in enumerate(cases, start=position + 1):
            if previous is not None and failed is None:
                before, result = previous
                session = following(self._input, child_id(self._batch_id(), case.id), result)
                if session is None:
                    failed = before
                else:
                    case = case.model_copy(update={"session": session})
            if failed is not None:
                self._record(not_followed(case, source, n, failed))
                continue
            result = await self._run_case(case, source, n)
            previous, failed = ((case.id, result), None) if result else (None, case.id)
        slots.release()
        self._show()

    async def _run_case(
        self,
        case: CasePlan,
        source: str,
        position: int,
        on_start: Callable[[], None] = lambda: None,
    ) -> RunResult | None:
        workflow_id = child_id(self._batch_id(), case.id)
        self._running.add(workflow_id)
        record, result = await answer_case(
            self._input, workflow_id, case, source, position, on_start
        )
        # Not in a ``finally``: an evicted workflow's tasks are closed, not finished.
        self._record(record)
        self._running.discard(workflow_id)
        self._show()
        return result if record.error is None else None

    def _record(self, record: CaseRecord) -> None:
        self._records.append(record)
        self._carried += len(record.model_dump_json())

    def _batch_id(self) -> str:
        return self._input.batch_id or workflow.info().workflow_id

    def _history_full(self) -> bool:
        """Temporal suggests continuing as new: cases planned inline (a dataset's)
        can fill a history long before ``cases_per_run`` of them."""
        return workflow.info().is_continue_as_new_suggested()

    def _continue_as_new(self, next_case: int) -> None:
        workflow.continue_as_new(
            self._input.model_copy(
                update={
                    "next_source": self._source,
                    "next_case": next_case,
                    "records": sorted(self._records, key=lambda r: r.position),
                    "snapshots": self._snapshots.left(self._source),
                }
            )
        )

    def _show(self) -> None:
        p = self.progress()
        workflow.set_current_details(
            f"**Rerun on {self._input.agent}**: {p.cases_done} cases done "
            f"({p.cases_failed} failed), {p.running} running; "
            f"{p.sources_started} of {p.sources} sources started."
        )
