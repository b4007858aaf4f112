"""A rerun batch: its input, the cases one source becomes, and what became of each
(the workflow is ratchet.evals._batch_workflow; the client side ratchet.evals._batch)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ratchet.types import AgentSession, Message, SparseModel, ToolCall, Usage
from ratchet.wire import RERUN_BATCH_WORKFLOW as RERUN_BATCH_WORKFLOW
from ratchet.wire import CheckedOptions, InterceptorRef, RunOptions, at_least

from ._recording import RECORDING, Recording

PLAN_ACTIVITY = "ratchet.rerun_plan"
"""Reads a recorded session or run and turns it into rerun cases."""


def replaying(options: RunOptions, recording: Recording) -> RunOptions:
    """``options`` for a rerun whose tool calls ``recording`` answers (through the
    ``RECORDING`` tool interceptor ``EvalsPlugin`` gives a worker)."""
    ref = InterceptorRef(name=RECORDING, config=recording.model_dump(mode="json"))
    return options.model_copy(update={"tool_interceptor": ref})


MAX_CONCURRENCY = 50
"""Most child runs a batch has in flight."""
CASES_PER_RUN = 500
"""Cases a batch's workflow run starts before it continues as new."""
MAX_CASES = 10_000
"""Most cases one batch takes."""
MAX_RECORD_BYTES = 1536 * 1024
"""Most bytes of case records a batch carries over continue-as-new and returns (a
payload may hold 2 MB): past it, the sources left are recorded as not rerun."""
ERROR_CHARS = 300
INLINE_BYTES = 32 * 1024
PLAN_BYTES = 1024 * 1024
"""About the most one page of a source's cases holds (a payload may hold 2 MB)."""
MAX_SOURCE_HISTORY_BYTES = 24 * 1024 * 1024
"""Most bytes a snapshot's plan may write to a batch's history (each page's request
carries the snapshot, each case its conversation inline): about half of Temporal's
50 MB history limit, the rest for the cases the batch runs before it continues as new."""
MAX_SNAPSHOT_BYTES = 384 * 1024
"""Most bytes of snapshots one batch's input carries (with its records, under the 2 MB
a continue-as-new input may hold); a larger dataset is split over several batches."""


class BatchOptions(CheckedOptions):
    concurrency: int = 20
    """Child runs in flight at once (1 to 50)."""
    cases_per_run: int = CASES_PER_RUN
    inline_bytes: int = INLINE_BYTES
    """A case's conversation up to its message goes inline up to this size, else by
    reference into the source's log (reading it costs a worker a replay of the source,
    once per worker and thread version; copying it costs history)."""

    def problems(self) -> list[str]:
        problems = at_least("concurrency", self.concurrency, 1)
        if self.concurrency > MAX_CONCURRENCY:
            problems.append(
                f"concurrency={self.concurrency}, but a batch runs at most {MAX_CONCURRENCY} "
                "cases at once"
            )
        return problems + at_least("cases_per_run", self.cases_per_run, 1)


class SourceSnapshot(BaseModel):
    """A source's conversation as it was exported (``ratchet eval export``), with what
    each of its user messages cost and took: rerun without reading Temporal."""

    source: str
    messages: list[Message]
    usage: list[Usage] = Field(default_factory=list[Usage])
    """What the recorded turns of each user message cost, in order."""
    latency_s: list[float] = Field(default_factory=list[float])

    def recorded(self, n: int) -> tuple[Usage, float]:
        """The cost and time of user message ``n`` (0-based), as exported."""
        usage = self.usage[n] if n < len(self.usage) else Usage()
        return usage, self.latency_s[n] if n < len(self.latency_s) else 0.0


class CaseRecord(SparseModel):
    """A case of a batch: the child run that answered it, or why there is none."""

    id: str
    source: str
    position: int
    """Its place in the batch (sources in order, their user messages in order)."""
    workflow_id: str | None = None
    error: str | None = None
    latency_s: float = 0.0


class BatchInput(BaseModel):
    agent: str
    sources: list[str]
    batch_id: str = ""
    """Names the cases' runs (``child_id``); default: the batch's workflow id."""
    options: RunOptions = Field(default_factory=RunOptions)
    """For every child run; each case answers its calls from its own recording."""
    policy: Recording = Field(default_factory=Recording)
    """What happens to unrecorded calls and to approvals (its ``calls`` are unused:
    each case has its own)."""
    batch: BatchOptions = Field(default_factory=BatchOptions)
    free_running: bool = False
    """Each source's cases in order, each continuing the new agent's own thread so far
    (teacher-forced, the default: each on the recorded conversation)."""
    snapshots: list[SourceSnapshot] = Field(default_factory=list[SourceSnapshot])
    """Sources given as snapshots, named in ``sources`` by their ``source`` (the
    others are read from Temporal); a continued run carries those not yet planned."""
    next_source: int = 0
    next_case: int = 0
    """Cases of ``sources[next_source]`` started by earlier workflow runs."""
    records: list[CaseRecord] = Field(default_factory=list[CaseRecord])


class PlanRequest(SparseModel):
    source: str
    agent: str
    batch_id: str
    thread_kind: str = "messages"
    inline_bytes: int = 0
    free_running: bool = False
    start: int = 0
    """The first case wanted (a source's cases come in pages of about ``max_bytes``)."""
    max_bytes: int = PLAN_BYTES
    snapshot: SourceSnapshot | None = None
    """The source's conversation, when the batch was given a snapshot of it."""


class RecordedSide(SparseModel):
    """What the source's agent did with a case: its answer, calls, cost and time."""

    answer: str | None = None
    tool_calls: list[ToolCall] = []
    usage: Usage = Usage()
    latency_s: float = 0.0

    @classmethod
    def of(cls, after: list[Message], usage: Usage, latency_s: float) -> RecordedSide:
        """From the messages the recorded run added: its last answer, every call."""
        answers = [m for m in after if m.role == "assistant" and m.content]
        return cls(
            answer=answers[-1].text if answers else None,
            tool_calls=[c for m in after if m.role == "assistant" for c in m.tool_calls],
            usage=usage,
            latency_s=latency_s,
        )


class CasePlan(BaseModel):
    """One case as a child run's input: the thread before the user message (a
    reference into the source's log, or the messages themselves), the message, and
    the recorded calls that answered it."""

    id: str
    messages: list[Message]
    session: AgentSession | None = None
    recording: Recording
    old: RecordedSide = Field(default_factory=RecordedSide)
    """For the report, so building it reads no source again."""

    @property
    def prompt(self) -> str:
        return self.messages[-1].text


class SourcePlan(BaseModel):
    """Cases ``start`` to ``start + len(cases)`` of a source, of ``total``."""

    source: str
    start: int = 0
    total: int = 0
    cases: list[CasePlan] = Field(default_factory=list[CasePlan])
    error: str | None = None


class BatchProgress(SparseModel):
    sources: int
    sources_started: int
    cases_done: int
    cases_failed: int
    running: int


class BatchResult(SparseModel):
    agent: str
    policy: Recording = Field(default_factory=Recording)
    records: list[CaseRecord]


def child_id(batch_id: str, case_id: str) -> str:
    """The workflow id of the run that answers case ``case_id`` of batch ``batch_id``."""
    return f"{batch_id}/{case_id}"


def short(error: str) -> str:
    return error if len(error) <= ERROR_CHARS else error[: ERROR_CHARS - 1] + "…"
