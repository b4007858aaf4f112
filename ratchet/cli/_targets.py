"""What ``ratchet sessions VERB ID`` works on: a session, or a single run (the ids
``sessions list`` shows are both), and the verbs on a run."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ._printing import print_last, print_pending, turns_table

if TYPE_CHECKING:
    from ratchet.client import AgentClient, RunHandle, SessionHandle


async def target(client: AgentClient, workflow_id: str) -> SessionHandle | RunHandle:
    """The session or the single run with that id (raises NotFoundError). A session's
    run id, as events and ``ratchet watch`` name it (``ID-run-N``: it runs inside the
    session's workflow), stands for its session."""
    from ratchet.errors import NotFoundError
    from ratchet.wire import parse_session_run_id

    try:
        kind = await client.kind_of(workflow_id)
    except NotFoundError:
        parsed = parse_session_run_id(workflow_id)
        if parsed is None:
            raise
        workflow_id, kind = parsed[0], await client.kind_of(parsed[0])
    if kind == "run":
        return client.get_run(workflow_id)
    return client.get_session(workflow_id)


async def show_run(run: RunHandle, last: int) -> int:
    """A run's agent, status, pending work, turns and last messages."""
    state = await run.record()
    execution = state.execution
    print(f"run: {run.id}")
    print(f"agent: {state.session.agent_id} · {state.status.value}")
    if state.status.value == "FAILED":
        print(f"failed: {await _failure(run)}")
    if execution is not None:
        print(f"tokens: {execution.usage.total_tokens} · turns: {execution.step_count}")
        if execution.usage.cost_usd:
            print(f"cost: ${execution.usage.cost_usd:.4f}")
    print_pending(await run.pending())
    if execution is not None and execution.step_results:
        print(f"\nturns of {run.id} ({execution.status.value}):")
        print(turns_table(execution))
    print_last(await run.thread(last=last), last)  # read alone: not paged in whole
    return 0


async def _failure(run: RunHandle) -> str:
    """Why a failed run failed, as its result says."""
    from ratchet.errors import RunError

    try:
        await run.result()
    except RunError as e:
        return str(e)
    return "(no reason recorded)"


async def export_run(run: RunHandle) -> int:
    thread = await run.thread()
    data = {
        "run": run.id,
        "thread": thread.model_dump(mode="json"),
        "state": await run.export_state(),
    }
    print(json.dumps(data, indent=2))
    return 0


async def stop_run(run: RunHandle) -> int:
    from temporalio.client import WorkflowExecutionStatus

    status = (await run.workflow.describe()).status
    if status != WorkflowExecutionStatus.RUNNING:
        ended = status.name if status else "unknown"
        if status == WorkflowExecutionStatus.COMPLETED:  # stopped before, or answered
            ended = str((await run.result()).status)
        print(f"run {run.id} has ended ({ended}); nothing to stop")
        return 0
    await run.stop()
    print(f"run {run.id} stopped (its finished turns are kept)")
    return 0
