"""The replay gate: replay what is running now against the code about to serve it.

A new build may serve workflow runs started on an old one (a session that moves
to it replays nothing, but an auto-upgraded run or a rolled-back build does), and a
changed workflow that is not behind ``workflow.patched`` fails such a run's next
workflow task with a non-determinism error. ``replay_open`` fetches the histories
of the open runs (each open session's current run among them), decodes them with
the client's data converter (so encrypted payloads too) and replays them against
the local workflow classes; ``replay`` does the same for histories in hand, such
as a release's recorded ones in ``tests/histories/``.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory
from temporalio.converter import DataConverter
from temporalio.runtime import (
    LogForwardingConfig,
    LoggingConfig,
    Runtime,
    TelemetryConfig,
    TelemetryFilter,
)
from temporalio.worker import Replayer

from ratchet.client import AgentClient
from ratchet.errors import InvalidInputError
from ratchet.evals import RerunBatchWorkflow
from ratchet.plugin import WORKFLOWS, ratchet_converter
from ratchet.worker import workflow_runner

RATCHET_WORKFLOWS: tuple[type, ...] = (*WORKFLOWS, RerunBatchWorkflow)
"""The workflows a ``ratchet worker`` runs: ``RatchetPlugin``'s and the rerun batch."""
DEFAULT_LIMIT = 1000
NOT_GIVEN = "not replayed"
ERROR_CHARS = 2000
SAVE_ONE = "temporal workflow show --workflow-id ID --output json"


@dataclass(frozen=True)
class Mismatch:
    """A history the local code does not replay: ``error`` says which command
    differs (temporalio's non-determinism error) or why it was not replayed."""

    workflow_id: str
    run_id: str
    workflow_type: str
    error: str


@dataclass(frozen=True)
class ReplayReport:
    replayed: int = 0
    """Histories replayed (each one workflow run)."""
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches

    @property
    def not_given(self) -> int:
        """Histories not replayed because their workflow classes were not given."""
        return sum(1 for m in self.mismatches if m.error.startswith(NOT_GIVEN))

    @property
    def failed(self) -> int:
        """Histories that do not replay against this code."""
        return len(self.mismatches) - self.not_given

    def lines(self) -> list[str]:
        """What ``ratchet replay`` prints: one line per mismatch, then the counts."""
        out = [
            f"{m.workflow_id} (run {m.run_id}, {m.workflow_type}): {m.error}"
            for m in self.mismatches
        ]
        skipped, failed = self.not_given, self.failed
        ran = f"{self.replayed} histor" + ("y" if self.replayed == 1 else "ies")
        verdict = "all replay" if not failed else f"{failed} do not replay"
        summary = f"{ran} replayed against this code: {verdict}"
        if skipped:
            summary += f"; {skipped} not replayed (their workflows were not given)"
        return [*out, summary]


async def replay_open(
    client: AgentClient | Client,
    *,
    query: str | None = None,
    limit: int = DEFAULT_LIMIT,
    workflows: Sequence[type] = (),
) -> ReplayReport:
    """Replay the open workflow runs (``ExecutionStatus="Running"``, on the client's
    task queue for an ``AgentClient``, narrowed by ``query``: a Temporal list filter)
    against Ratchet's workflows and ``workflows`` (your own), at most ``limit``."""
    if limit < 1:
        raise ValueError(f"limit={limit}: replay at least one history (e.g. 1000).")
    temporal = client.temporal if isinstance(client, AgentClient) else client
    filters = ['ExecutionStatus="Running"']
    if isinstance(client, AgentClient):
        filters.append(f'TaskQueue="{client.task_queue}"')
    if query:
        filters.append(f"({query})")
    return await replay(
        _open_histories(temporal, " AND ".join(filters), limit),
        workflows=workflows,
        data_converter=temporal.data_converter,
    )


async def _open_histories(
    temporal: Client, query: str, limit: int
) -> AsyncIterator[WorkflowHistory]:
    async for execution in temporal.list_workflows(query, limit=limit):
        handle = temporal.get_workflow_handle(execution.id, run_id=execution.run_id)
        yield await handle.fetch_history()


async def replay(
    histories: Iterable[WorkflowHistory] | AsyncIterator[WorkflowHistory],
    *,
    workflows: Sequence[type] = (),
    data_converter: DataConverter | None = None,
) -> ReplayReport:
    """Replay ``histories`` against Ratchet's workflows and ``workflows``, decoding
    payloads with ``data_converter`` (default: Ratchet's)."""
    known = [*RATCHET_WORKFLOWS, *workflows]
    names = {workflow._Definition.must_from_class(w).name for w in known}
    replayer = Replayer(
        workflows=known,
        data_converter=data_converter or ratchet_converter(None),
        workflow_runner=workflow_runner(),
        runtime=_quiet_runtime(),
    )
    mismatches: list[Mismatch] = []
    replayable: list[WorkflowHistory] = []
    async for history in _each(histories):
        _check_whole(history, f"The history of {history.workflow_id}")
        kind = _workflow_type(history)
        if kind in names:
            replayable.append(history)
        else:
            error = (
                f"{NOT_GIVEN}: no workflow of type {kind!r} was given (pass your workflows: "
                "ratchet replay --workflows module:ATTR)"
            )
            mismatches.append(Mismatch(history.workflow_id, _run_id(history), kind, error))
    async with replayer.workflow_replay_iterator(_iterate(replayable)) as results:
        async for result in results:
            if result.replay_failure is not None:
                history = result.history
                error = readable(str(result.replay_failure))
                kind = _workflow_type(history)
                mismatches.append(Mismatch(history.workflow_id, _run_id(history), kind, error))
    return ReplayReport(replayed=len(replayable), mismatches=mismatches)


@functools.cache
def _quiet_runtime() -> Runtime:
    """The replayer's own SDK runtime: its core logs a WARN line, in colour, for each
    history that fails, which the report says more clearly. Only the core's errors go
    on, to the ``ratchet.deploy.replay`` logger."""
    logger = logging.getLogger("ratchet.deploy.replay")
    quiet = TelemetryFilter(core_level="ERROR", other_level="ERROR")
    forwarding = LogForwardingConfig(logger=logger, append_target_to_name=False)
    return Runtime(telemetry=TelemetryConfig(logging=LoggingConfig(quiet, forwarding)))


def load_history(path: Path) -> WorkflowHistory:
    """A history saved as JSON (the Temporal UI's or ``temporal workflow show
    --output json``'s download, or ``tests/record_histories.py``'s), named by its
    path (its workflow id is not in it)."""
    try:
        history = WorkflowHistory.from_json(str(path), json.loads(path.read_text()))
    except (ValueError, TypeError, KeyError) as e:  # not JSON, or not a history's
        raise InvalidInputError(
            f"{path} is not a Temporal history in JSON ({e}); save one with {SAVE_ONE}."
        ) from None
    _check_whole(history, str(path))
    return history


def _check_whole(history: WorkflowHistory, name: str) -> None:
    """Refuse a history that does not start where a run starts: replay needs it all."""
    if not history.events:
        raise InvalidInputError(f"{name} holds no events: save a whole history with {SAVE_ONE}.")
    first = history.events[0]
    if not first.HasField("workflow_execution_started_event_attributes"):
        name_parts = EventType.Name(first.event_type).removeprefix("EVENT_TYPE_").split("_")
        kind = "".join(part.capitalize() for part in name_parts)
        raise InvalidInputError(
            f"{name} starts at event {first.event_id} ({kind}), not at the run's "
            "WorkflowExecutionStarted: replay needs the whole history from its first "
            f"event; save it with {SAVE_ONE}."
        )


async def _each(
    histories: Iterable[WorkflowHistory] | AsyncIterator[WorkflowHistory],
) -> AsyncIterator[WorkflowHistory]:
    if isinstance(histories, AsyncIterator):
        async for history in histories:
            yield history
    else:
        for history in histories:
            yield history


async def _iterate(histories: list[WorkflowHistory]) -> AsyncIterator[WorkflowHistory]:
    for history in histories:
        yield history


def _workflow_type(history: WorkflowHistory) -> str:
    started = history.events[0].workflow_execution_started_event_attributes
    return started.workflow_type.name


def _run_id(history: WorkflowHistory) -> str:
    started = history.events[0].workflow_execution_started_event_attributes
    return started.original_execution_run_id or "?"


def readable(text: str) -> str:
    """The messages in temporalio's failure (a Rust debug dump: its ``message: "..."``
    fields, outermost first), with a hint where one helps."""
    found = [m.encode().decode("unicode_escape") for m in _MESSAGE.findall(text)]
    messages = [m.strip("'") for m in found if m]
    text = ": ".join(messages) if messages else " ".join(text.split())
    if "binary/encrypted" in text:
        text += " (give this command the workers' RATCHET_ENCRYPTION_KEYS)"
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…"


_MESSAGE = re.compile(r'message: "((?:[^"\\]|\\.)*)"')
