"""Deleting a session and everything of it (``AgentClient.delete_session``).

What belongs to a session, and how each is found:

- its workflow runs (every run of its continue-as-new chain): ``WorkflowId``;
- the runs it started (sub-agents, at any depth): ``RootWorkflowId``;
- the schedules that send to it (their memo names it) and their firings
  (``TemporalScheduledById``);
- evaluation reruns of it (``RerunBatch`` workflows whose input names it as a
  source) and their case runs;
- the payload files stored for each of those workflows (``FileStorageDriver``
  keeps one directory per workflow id).

Temporal deletes asynchronously: a deleted run may answer for seconds, and a
delete of a just-closed run can be dropped. So each run's delete is sent again
until a describe by run id answers NOT_FOUND, and the visibility queries above
find none, within ``wait`` seconds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, Field
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from ratchet.errors import (
    DeletionIncompleteError,
    InvalidInputError,
    PayloadDecryptionError,
    SessionHasForksError,
    SessionNotFoundError,
)
from ratchet.history import anchor_results
from ratchet.payloads import FileStorageDriver
from ratchet.wire import RERUN_BATCH_WORKFLOW, SESSION_WORKFLOW, parse_session_run_id

from ._error_mapping import check_id

if TYPE_CHECKING:
    from ._client import AgentClient

T = TypeVar("T")

FORKED_FROM = "ratchet.forked_from"
"""Memo key a fork records its source under (carried by its continue-as-new)."""
DELETE_WAIT = 120.0
"""Seconds ``delete_session`` waits for Temporal to have deleted every run."""
STOP_WAIT = 10.0
"""Seconds a running session's run in progress gets to stop before it is terminated."""
RESEND_AFTER = 2.0
"""Seconds after which a delete that has not taken is sent again (then 4, 8... 30)."""
CALLS_AT_ONCE = 20
"""Deletes and describes in flight at once."""


class SessionDeletion(BaseModel):
    """What ``delete_session`` deleted. ``found`` is ``False`` when nothing of the
    session was left (an unknown id, or one deleted already)."""

    session_id: str
    found: bool
    terminated: bool = False
    """It was open: its run in progress was asked to stop, then it was terminated."""
    runs: list[str] = Field(default_factory=list[str])
    """The Temporal run ids of the session's own workflow runs."""
    child_runs: list[str] = Field(default_factory=list[str])
    """Workflow ids of the runs it started (sub-agents)."""
    schedules: list[str] = Field(default_factory=list[str])
    schedule_runs: list[str] = Field(default_factory=list[str])
    """Workflow ids of those schedules' firings."""
    eval_runs: list[str] = Field(default_factory=list[str])
    """Workflow ids of evaluation reruns of the session and of their cases."""
    payload_files: int = 0
    """Files deleted from a ``FileStorageDriver`` directory."""
    payloads_left: list[str] = Field(default_factory=list[str])
    """Workflow ids whose payloads are in a store Ratchet cannot delete from (S3,
    GCS, a driver of your own): delete them there (docs/sessions.md says how)."""
    forks: list[str] = Field(default_factory=list[str])
    """Forks that read earlier messages from this session (deleted with ``force``:
    they lose the messages before their fork point)."""


class _Run(BaseModel):
    workflow_id: str
    run_id: str
    workflow_type: str
    running: bool
    started: datetime


async def delete_session(
    client: AgentClient, session_id: str, *, force: bool = False, wait: float = DELETE_WAIT
) -> SessionDeletion:
    """See ``AgentClient.delete_session``."""
    check_id("session", session_id)
    temporal = client.temporal
    own = await _runs(temporal, f"WorkflowId = {quoted(session_id)}")
    other = {run.workflow_type for run in own} - {SESSION_WORKFLOW}
    if other:
        raise SessionNotFoundError(
            f"{session_id} is a {other.pop()} workflow, not a session: delete_session "
            "deletes sessions (a single run: temporal workflow delete)."
        )
    since = min((run.started for run in own), default=None)
    forks = await _forks(temporal, session_id, since) if since else []
    if forks and not force:
        raise SessionHasForksError(session_id, forks)
    terminated = any(run.running for run in own) and await _terminate(client, session_id)
    schedules = await _schedules_sending_to(temporal, session_id)
    for schedule_id in schedules:
        await _delete_schedule(temporal, schedule_id)
    queries = await _queries(temporal, session_id, schedules)
    found = {name: await _runs(temporal, query) for name, query in queries.items()}
    every = [run for runs in found.values() for run in runs]
    await _delete(temporal, session_id, every, queries, wait=wait)
    ids = sorted({run.workflow_id for run in every} | {session_id})
    files, left = await asyncio.to_thread(_delete_payloads, temporal, ids)
    return SessionDeletion(
        session_id=session_id,
        found=bool(every or schedules or files),
        terminated=terminated,
        runs=[run.run_id for run in found["own"]],
        child_runs=_ids(found["children"]),
        schedules=schedules,
        schedule_runs=_ids(r for name, rs in found.items() if name.startswith("sched") for r in rs),
        eval_runs=_ids(r for name, rs in found.items() if name.startswith("rerun") for r in rs),
        payload_files=files,
        payloads_left=left,
        forks=forks,
    )


async def _queries(temporal: Client, session_id: str, schedules: list[str]) -> dict[str, str]:
    """The visibility queries that list the session's runs and the workflows of it."""
    me = quoted(session_id)
    queries = {
        "own": f"WorkflowId = {me}",
        "children": f"RootWorkflowId = {me} AND WorkflowId != {me}",
    }
    for schedule_id in schedules:
        queries[f"schedule {schedule_id}"] = f"TemporalScheduledById = {quoted(schedule_id)}"
    for batch_id in await _reruns_of(temporal, session_id):
        queries[f"rerun {batch_id}"] = f"RootWorkflowId = {quoted(batch_id)}"
    return queries


def quoted(value: str) -> str:
    """``value`` as a visibility query string literal."""
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value:
        return f'"{value}"'
    raise InvalidInputError(
        f"{value!r} holds both kinds of quote: no visibility query can name it."
    )


def _ids(runs: Any) -> list[str]:
    return sorted({run.workflow_id for run in runs})


async def _runs(temporal: Client, query: str) -> list[_Run]:
    """Every run (open and closed) that ``query`` lists."""
    return [
        _Run(
            workflow_id=info.id,
            run_id=info.run_id,
            workflow_type=info.workflow_type,
            running=info.status == WorkflowExecutionStatus.RUNNING,
            started=info.start_time,
        )
        async for info in temporal.list_workflows(query)
    ]


async def _forks(temporal: Client, session_id: str, since: datetime) -> list[str]:
    """Sessions that read from ``session_id``: forks of it, forks of those, and so
    on (each started after it, ``since``). A fork names its source in its memo; one
    from Ratchet 0.1.0 has no memo and is known by its default id
    (``<source>-fork-<hex>``)."""
    sources: dict[str, str] = {}
    after = (since - timedelta(seconds=1)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    query = f"WorkflowType = {quoted(SESSION_WORKFLOW)} AND StartTime >= '{after}'"
    async for info in temporal.list_workflows(query):
        if info.id in sources:
            continue
        try:
            memo = await info.memo()
        except (KeyError, PayloadDecryptionError):  # a memo under another encryption key
            memo = {}
        source = memo.get(FORKED_FROM)
        if isinstance(source, str):
            sources[info.id] = source
        elif "-fork-" in info.id:
            sources[info.id] = info.id.rpartition("-fork-")[0]
    forks: list[str] = []
    reached, copied = {session_id}, set[str]()
    while True:
        more = sorted(f for f, s in sources.items() if s in reached and f not in reached | copied)
        if not more:
            return sorted(forks)
        for fork in more:
            # A fork that re-anchored holds its own copy: it, and forks of it, read
            # nothing of the source any more.
            if await _copied_its_log(temporal, fork):
                copied.add(fork)
            else:
                forks.append(fork)
                reached.add(fork)


async def _copied_its_log(temporal: Client, session_id: str) -> bool:
    """Whether a run of the session copied its log into its own history (re-anchored:
    ``ratchet.workflows._anchoring``), so it no longer reads its source's runs."""
    async for info in temporal.list_workflows(f"WorkflowId = {quoted(session_id)}"):
        history = await temporal.get_workflow_handle(session_id, run_id=info.run_id).fetch_history()
        if next(anchor_results(history.events), None) is not None:
            return True
    return False


async def _terminate(client: AgentClient, session_id: str) -> bool:
    """Ask the run in progress to stop (its turns end at a safe point), then
    terminate the session, which waits for no queued message."""
    try:
        async with asyncio.timeout(STOP_WAIT):
            await client.get_session(session_id).stop()
    except Exception:  # noqa: BLE001 - no worker, or closed meanwhile: terminate anyway
        pass
    try:
        await client.temporal.get_workflow_handle(session_id).terminate(
            reason="deleted by its user (delete_session)"
        )
    except RPCError as e:
        if e.status != RPCStatusCode.NOT_FOUND:  # NOT_FOUND: it closed meanwhile
            raise
    return True


async def _schedules_sending_to(temporal: Client, session_id: str) -> list[str]:
    found = []
    async for listed in await temporal.list_schedules():
        if (await listed.memo()).get("session") == session_id:
            found.append(listed.id)
    return sorted(found)


async def _delete_schedule(temporal: Client, schedule_id: str) -> None:
    try:
        await temporal.get_schedule_handle(schedule_id).delete()
    except RPCError as e:
        if e.status != RPCStatusCode.NOT_FOUND:
            raise


async def _reruns_of(temporal: Client, session_id: str) -> list[str]:
    """Evaluation reruns (``RerunBatch`` workflows) whose sources name the session."""
    batches: set[str] = set()
    seen: set[str] = set()
    async for info in temporal.list_workflows(f"WorkflowType = {quoted(RERUN_BATCH_WORKFLOW)}"):
        if info.id not in seen:
            seen.add(info.id)
            sources = await _batch_sources(temporal, info.id, info.run_id)
            if any(_names_session(source, session_id) for source in sources):
                batches.add(info.id)
    return sorted(batches)


async def _batch_sources(temporal: Client, batch_id: str, run_id: str) -> list[object]:
    """The sources in a batch run's input (each run carries them all)."""
    handle = temporal.get_workflow_handle(batch_id, run_id=run_id)
    try:
        async for event in handle.fetch_history_events():
            payloads = event.workflow_execution_started_event_attributes.input.payloads
            (batch,) = await temporal.data_converter.decode(payloads) if payloads else [{}]
            return list(batch.get("sources", [])) if isinstance(batch, dict) else []
    except (RPCError, KeyError, PayloadDecryptionError):  # gone meanwhile, or another key's
        pass
    return []


def _names_session(source: object, session_id: str) -> bool:
    if not isinstance(source, str):
        return False
    parsed = parse_session_run_id(source)
    return source == session_id or (parsed is not None and parsed[0] == session_id)


async def _delete(
    temporal: Client,
    session_id: str,
    runs: Sequence[_Run],
    queries: dict[str, str],
    *,
    wait: float,
) -> None:
    """Delete each run; return once each answers NOT_FOUND and the visibility
    queries list none of them, sending a delete again to a run still there."""
    deadline = time.monotonic() + wait
    waiting = {(run.workflow_id, run.run_id) for run in runs}
    resend_at: dict[tuple[str, str], float] = {}
    every = dict.fromkeys(waiting, RESEND_AFTER)
    calls = asyncio.Semaphore(CALLS_AT_ONCE)
    delay = 0.1
    while waiting:
        now = time.monotonic()
        due = [key for key in waiting if now >= resend_at.get(key, now)]
        await asyncio.gather(*(_bounded(calls, _send_delete(temporal, *key)) for key in due))
        for key in due:  # sent again less and less often: a long session has many runs
            resend_at[key], every[key] = now + every[key], min(every[key] * 2, 30.0)
        await asyncio.sleep(delay)
        delay = min(1.0, delay * 2)
        keys = sorted(waiting)
        gone = await asyncio.gather(*(_bounded(calls, _gone(temporal, *key)) for key in keys))
        waiting -= {key for key, done in zip(keys, gone, strict=True) if done}
        if waiting and time.monotonic() > deadline:
            still = sorted(f"{w} (run {r})" for w, r in waiting)
            raise DeletionIncompleteError(session_id, still, wait)
    deleted = {run.run_id for run in runs}
    for query in queries.values():
        while listed := [r for r in await _runs(temporal, query) if r.run_id in deleted]:
            if time.monotonic() > deadline:
                still = [f"{r.workflow_id} (run {r.run_id}, still listed)" for r in listed]
                raise DeletionIncompleteError(session_id, still, wait)
            await asyncio.sleep(0.2)


async def _bounded(calls: asyncio.Semaphore, call: Awaitable[T]) -> T:
    async with calls:
        return await call


async def _send_delete(temporal: Client, workflow_id: str, run_id: str) -> None:
    request = DeleteWorkflowExecutionRequest(
        namespace=temporal.namespace,
        workflow_execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
    )
    try:
        await temporal.workflow_service.delete_workflow_execution(request)
    except RPCError as e:
        if e.status != RPCStatusCode.NOT_FOUND:
            raise


async def _gone(temporal: Client, workflow_id: str, run_id: str) -> bool:
    try:
        await temporal.get_workflow_handle(workflow_id, run_id=run_id).describe()
    except RPCError as e:
        if e.status == RPCStatusCode.NOT_FOUND:
            return True
        raise
    return False


def _delete_payloads(temporal: Client, workflow_ids: Sequence[str]) -> tuple[int, list[str]]:
    """Files deleted from directory drivers; the ids left in stores with no delete."""
    storage = temporal.data_converter.external_storage
    if storage is None:
        return 0, []
    files, left = 0, []
    for driver in storage.drivers:
        if isinstance(driver, FileStorageDriver):
            files += sum(driver.delete_workflow(w) for w in workflow_ids)
        else:
            left = list(workflow_ids)
    return files, left
