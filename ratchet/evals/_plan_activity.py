"""The planning activity of a rerun batch: read a recorded session or run and turn
each of its user messages into a child run's input.

A session's or run's cases do not copy a long conversation: each names the
source's log up to the user message (a ``ThreadBase``, as a fork does), so a case's
input stays small however long the source is. A short one (up to
``BatchOptions.inline_bytes``) and a dataset's snapshot (there is no log to point
into) go inline. Each case carries the
tool calls recorded after its message, with their results, for the rerun to answer
from (``ratchet.evals._recording``).
"""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime
from typing import NamedTuple

from temporalio import activity
from temporalio.client import Client, WorkflowQueryFailedError
from temporalio.service import RPCError, RPCStatusCode

from ratchet.errors import ThreadResolutionError
from ratchet.history import Holder, fetch_range, recorded_turns, usage_per_user_message
from ratchet.types import (
    AgentSession,
    Message,
    ThreadBase,
    ThreadData,
    Usage,
    approximate_size,
    new_id,
)
from ratchet.wire import PAGE_BYTES, RUN_WORKFLOWS, SESSION_WORKFLOW, LogInfo

from ._recording import Recording, case_id, recorded_calls, user_turns
from ._rerun_types import PLAN_ACTIVITY, CasePlan, PlanRequest, RecordedSide, SourcePlan, child_id


@activity.defn(name=PLAN_ACTIVITY)
async def plan_rerun(request: PlanRequest) -> SourcePlan:
    """Cases ``request.start`` onwards of ``request.source``, about ``max_bytes`` of
    them; a source that cannot be read is a plan with ``error`` (not retried)."""
    client = activity.client()
    try:
        return await _plan(client, request)
    except (RPCError, WorkflowQueryFailedError, ThreadResolutionError) as e:
        if isinstance(e, RPCError) and e.status == RPCStatusCode.NOT_FOUND:
            error = (
                f"There is no workflow {request.source} (or it is past the namespace's "
                "retention: rerun a dataset snapshot instead)."
            )
            return SourcePlan(source=request.source, error=error)
        if isinstance(e, RPCError) and e.status == RPCStatusCode.UNAVAILABLE:
            raise  # the server is away: retry
        return SourcePlan(source=request.source, error=f"Could not read {request.source}: {e}")


class Read(NamedTuple):
    """A source's messages, where its log is (none for a snapshot), and what each of
    its user messages cost and took."""

    messages: list[Message]
    log: Holder | None
    recorded: list[tuple[Usage, float]]


async def _read(client: Client, request: PlanRequest) -> Read | str:
    """The source (or its snapshot), or why it cannot be rerun."""
    source, snapshot = request.source, request.snapshot
    if snapshot is not None:
        users = sum(m.role == "user" for m in snapshot.messages)
        return Read(snapshot.messages, None, [snapshot.recorded(n) for n in range(users)])
    handle = client.get_workflow_handle(source)
    description = await handle.describe()
    handle = client.get_workflow_handle(source, run_id=description.run_id)  # as described
    if description.workflow_type not in (SESSION_WORKFLOW, *RUN_WORKFLOWS):
        return (
            f"{source} is a {description.workflow_type} workflow, not an agent run or "
            "session; a batch reruns those."
        )
    info = await handle.query("log_info", result_type=LogInfo)
    log = Holder(source, description.run_id, info.thread_id)
    messages, _ = await fetch_range(client, log, 0, info.length, page_bytes=PAGE_BYTES)
    return Read(messages, log, usage_per_user_message(messages, await recorded_turns(handle)))


async def _plan(client: Client, request: PlanRequest) -> SourcePlan:
    source = request.source
    read = await _read(client, request)
    if isinstance(read, str):
        return SourcePlan(source=source, error=read)
    messages, base, recorded = read
    turns = user_turns(messages)
    if not turns:
        return SourcePlan(source=source, error=f"{source} holds no user message to rerun.")
    sizes = list(itertools.accumulate(map(approximate_size, messages)))
    plan = SourcePlan(source=source, start=request.start, total=len(turns))
    size = 0
    for n, (start, end) in enumerate(turns[request.start :], start=request.start):
        id = case_id(source, n + 1)
        prompt = messages[start].model_copy(update={"id": new_id()})
        after = messages[start + 1 : end]
        # Free-running, a case may make any of the source's calls, in any order.
        recording = Recording(calls=recorded_calls(messages if request.free_running else after))
        old = RecordedSide.of(after, *recorded[n])
        if request.free_running:  # the batch gives it the new agent's thread so far
            case = CasePlan(id=id, messages=[prompt], recording=recording, old=old)
        elif base is None or start == 0 or sizes[start - 1] <= request.inline_bytes:
            before = [m.model_copy(update={"id": new_id()}) for m in messages[:start]]
            case = CasePlan(id=id, messages=[*before, prompt], recording=recording, old=old)
        else:
            assert base is not None
            session = _based_session(
                request,
                child_id(request.batch_id, id),
                base,
                start,
                messages[start - 1] if start else None,
            )
            case = CasePlan(id=id, messages=[prompt], session=session, recording=recording, old=old)
        size += len(case.model_dump_json())
        if plan.cases and size > request.max_bytes:
            break
        plan.cases.append(case)
    return plan


def _based_session(
    request: PlanRequest, session_id: str, log: Holder, length: int, last: Message | None
) -> AgentSession:
    """A session whose thread is the source's log up to ``length`` (by reference)."""
    session = AgentSession.new(
        request.agent, datetime.now(UTC), session_id=session_id, thread_kind=request.thread_kind
    )
    thread = ThreadData(id=f"thread-{uuid.uuid4().hex[:12]}", kind=request.thread_kind)
    if last is not None:
        thread.base = ThreadBase(
            workflow_id=log.workflow_id,
            run_id=log.run_id,
            version=length,
            last_id=last.id,
            thread_id=log.thread_id,
        )
    return session.model_copy(update={"thread": thread})
