"""A rerun batch's cases as child runs (``RerunBatchWorkflow``'s helpers): starting
one and recording what became of it, the session a free-running case continues, and
the sources given as snapshots."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from temporalio import workflow
from temporalio.exceptions import ChildWorkflowError, FailureError, WorkflowAlreadyStartedError

with workflow.unsafe.imports_passed_through():
    from ratchet.types import AgentSession
    from ratchet.wire import AGENT_RUN_WORKFLOW, RUN_WORKFLOW, RunInput, RunResult

    from ._rerun_types import (
        MAX_CASES,
        BatchInput,
        CasePlan,
        CaseRecord,
        SourceSnapshot,
        replaying,
        short,
    )


CASES_AS_AGENT_RUN = "ratchet-rerun-cases-as-agent-run"
"""A case runs as an ``AgentRun``; it ran as an ``AgentRunWorkflow`` before."""


async def answer_case(
    input: BatchInput,
    workflow_id: str,
    case: CasePlan,
    source: str,
    position: int,
    on_start: Callable[[], None] = lambda: None,
) -> tuple[CaseRecord, RunResult | None]:
    """Run ``case`` as child run ``workflow_id``; its record, and its result if it
    completed. ``on_start`` is called once the server has the child's start."""
    recording = input.policy.model_copy(update={"calls": case.recording.calls})
    options = replaying(input.options, recording)
    record = CaseRecord(id=case.id, source=source, position=position, workflow_id=workflow_id)
    began = workflow.now()
    result: RunResult | None = None
    announced = False
    try:  # the same command as execute_child_workflow, with the start seen on its own
        child = await workflow.start_child_workflow(
            AGENT_RUN_WORKFLOW if workflow.patched(CASES_AS_AGENT_RUN) else RUN_WORKFLOW,
            RunInput(
                agent=input.agent, messages=case.messages, session=case.session, options=options
            ),
            id=workflow_id,
            result_type=RunResult,
            static_summary=f"rerun of {case.id}",
        )
        on_start()
        announced = True
        result = await child
    except ChildWorkflowError as e:
        record.error = short(cause_of(e))
    except WorkflowAlreadyStartedError:  # a batch reset to before a child started
        record.error = f"{workflow_id} was already started (the batch was reset?)"
    if not announced:
        on_start()
    record.latency_s = (workflow.now() - began).total_seconds()
    return record, result


def following(input: BatchInput, workflow_id: str, previous: RunResult) -> AgentSession | None:
    """Free-running: a session whose thread is ``previous`` run's whole thread, by
    reference (the new agent's own answers so far), for case run ``workflow_id``."""
    end = previous.thread_end
    if end is None:
        return None
    kind = input.options.thread_kind
    session = AgentSession.new(
        input.agent,
        workflow.now(),
        session_id=workflow_id,
        thread_id=f"thread-{workflow.uuid4().hex[:12]}",
        thread_kind=kind,
    )
    session.thread.base = end
    return session


def not_followed(case: CasePlan, source: str, position: int, failed: str) -> CaseRecord:
    """A free-running case after one that failed: it has no conversation to follow."""
    error = f"Not rerun: free-running, it follows {failed}, which failed."
    return CaseRecord(id=case.id, source=source, position=position, error=error)


def cause_of(error: FailureError) -> str:
    """The deepest failure's message: what went wrong, not how it was wrapped."""
    cause: BaseException = error
    while isinstance(cause, FailureError) and cause.cause is not None:
        cause = cause.cause
    return cause.message if isinstance(cause, FailureError) else str(cause)


def batch_full(source: str) -> str:
    return (
        f"Not rerun: a batch takes at most {MAX_CASES} cases (and 1.5 MB of their records "
        "with the snapshots still to plan); "
        f"start another batch for the sources from {source} on."
    )


class Snapshots:
    """The sources a batch was given as snapshots: each by name, and the bytes that
    those from a place in the batch on add to a continue-as-new input."""

    def __init__(self, sources: list[str], snapshots: list[SourceSnapshot]) -> None:
        self._sources = sources
        self._by_source = {s.source: s for s in snapshots}
        sizes = [
            len(s.model_dump_json()) if (s := self._by_source.get(name)) else 0 for name in sources
        ]
        self._bytes_from = list(reversed([0, *itertools.accumulate(reversed(sizes))]))

    def of(self, source: str) -> SourceSnapshot | None:
        return self._by_source.get(source)

    def bytes_from(self, place: int) -> int:
        """What the snapshots of ``sources[place:]`` weigh."""
        return self._bytes_from[min(place, len(self._bytes_from) - 1)]

    def left(self, place: int) -> list[SourceSnapshot]:
        """The snapshots of ``sources[place:]`` (what a continued run still needs)."""
        return [s for name in self._sources[place:] if (s := self._by_source.get(name))]
