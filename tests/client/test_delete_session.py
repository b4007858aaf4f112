"""Deleting a session (``AgentClient.delete_session``): every workflow run of it, the
sub-agent runs it started, the schedules that send to it and their firings, and the
payloads it stored, checked through Temporal's visibility API and the payload
directory; another session's runs and payloads stay."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from ratchet.agents import RunContext, ScriptedModel, ToolCallingAgent, agent_tool
from ratchet.client import AgentClient, schedule_runs_query
from ratchet.errors import DeletionIncompleteError, SessionHasForksError
from ratchet.types import Message
from ratchet.wire import SessionOptions
from ratchet.worker import build_worker

from ..history import until

BIG = 300 * 1024
"""Over the 256 KiB threshold: a reply this long is stored in payload storage."""


def big(marker: str) -> str:
    return marker + "." * BIG


def lead() -> ToolCallingAgent:
    """Asks the researcher (a sub-agent: a child run) on its first turn, then answers
    each message with a reply large enough to be stored outside history."""

    def reply(messages: Sequence[Message], context: RunContext) -> Message | str:
        assistants = [m for m in messages if m.role == "assistant"]
        if not assistants:
            return ScriptedModel.call("researcher", input="why are there tides?")
        return big(f"<lead {len(assistants)}>")

    return ToolCallingAgent(
        ScriptedModel(reply), [agent_tool("researcher", "Research a question briefly.")]
    )


AGENTS = {
    "lead": lead,
    "researcher": lambda: ToolCallingAgent(ScriptedModel(lambda m, c: "the moon")),
    "keeper": lambda: ToolCallingAgent(ScriptedModel(lambda m, c: big("<keeper>"))),
}


async def listed(temporal: Client, query: str) -> list[str]:
    return [f"{w.id} {w.run_id}" async for w in temporal.list_workflows(query)]


def files(root: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in root.rglob("*") if path.is_file()}


async def test_delete_session_removes_its_runs_children_schedules_and_payloads_and_no_others(
    temporal_server, task_queue: str, tmp_path: Path
):
    store = tmp_path / "payloads"
    client = await AgentClient.connect(
        temporal_server.address, task_queue=task_queue, payload_storage=store
    )
    temporal = client.temporal
    async with build_worker(client, AGENTS):
        doomed = await client.start_session(
            "lead", options=SessionOptions(continue_as_new_after_runs=1)
        )
        for text in ("one", "two", "three"):
            await doomed.send(text)
        schedule_id = f"to-{doomed.id}"
        schedule = await client.schedule(
            schedule_id, "from the schedule", session=doomed.id, every=timedelta(hours=1)
        )
        await schedule.trigger()
        query = schedule_runs_query(schedule_id)
        await until(
            lambda: _statuses(temporal, query),
            lambda found: found == [WorkflowExecutionStatus.COMPLETED],
        )
        kept = await client.start_session("keeper")
        await kept.send("keep this")
        await until(lambda: _schedule_ids(temporal), lambda ids: schedule_id in ids)

        mine = f"WorkflowId = '{doomed.id}' OR RootWorkflowId = '{doomed.id}' OR {query}"
        before = await listed(temporal, mine)
        assert len(before) >= 6  # 4 runs (3 sends, 1 scheduled), the sub-agent, the firing
        kept_files = files(store / "workflows" / kept.id)
        assert kept_files and (store / "workflows" / doomed.id).is_dir()

        deleted = await client.delete_session(doomed.id)

        assert deleted.found and deleted.terminated
        assert len(deleted.runs) == 5  # continued as new after each of 4 sends
        assert len(deleted.child_runs) == 1 and deleted.schedules == [schedule_id]
        assert len(deleted.schedule_runs) == 1 and deleted.payload_files > 0
        assert deleted.forks == [] and deleted.payloads_left == []
        assert await listed(temporal, mine) == []
        for row in before:  # each run, by run id
            workflow_id, run_id = row.split()
            with pytest.raises(RPCError) as gone:
                await temporal.get_workflow_handle(workflow_id, run_id=run_id).describe()
            assert gone.value.status == RPCStatusCode.NOT_FOUND
        assert schedule_id not in await _schedule_ids(temporal)
        left = files(store)
        assert not any(b"<lead " in data for data in left.values())
        assert {p: d for p, d in left.items() if p.parent.name == kept.id} == kept_files

        # The other session reads its thread, in a client with nothing cached.
        fresh = AgentClient(temporal, task_queue=task_queue)
        thread = await fresh.get_session(kept.id).thread()
        assert thread.messages[-1].text == big("<keeper>")

        again = await client.delete_session(doomed.id)
        assert not again.found and again.runs == [] and again.payload_files == 0


async def test_a_session_that_forks_read_from_is_deleted_only_with_force(
    agent_client: AgentClient,
):
    temporal = agent_client.temporal
    async with build_worker(agent_client, AGENTS):
        source = await agent_client.start_session("keeper")
        await source.send("hello")
        fork = await agent_client.fork(source.id, at_turn=1)
        await fork.send("and a fork's own message")
        fork_of_fork = await agent_client.fork(fork.id, at_turn=1, session_id=f"{source.id}-b")

        with pytest.raises(SessionHasForksError) as refused:
            await agent_client.delete_session(source.id)
        assert refused.value.forks == sorted([fork.id, fork_of_fork.id])
        assert "force=True" in str(refused.value)
        assert await listed(temporal, f"WorkflowId = '{source.id}'")  # nothing deleted

        # Temporal deletes asynchronously (here for seconds): a short wait runs out,
        # naming what is still there, and deleting again finishes.
        with pytest.raises(DeletionIncompleteError) as unfinished:
            await agent_client.delete_session(source.id, force=True, wait=0.2)
        assert unfinished.value.remaining == [f"{source.id} (run {source.first_temporal_run_id})"]
        deleted = await agent_client.delete_session(source.id, force=True)
        assert deleted.forks == sorted([fork.id, fork_of_fork.id])
        assert await listed(temporal, f"WorkflowId = '{source.id}'") == []
        # The forks themselves stay (named, so their user knows what they lost).
        assert await listed(temporal, f"WorkflowId = '{fork_of_fork.id}'")


async def _statuses(temporal: Client, query: str) -> list[WorkflowExecutionStatus | None]:
    return [w.status async for w in temporal.list_workflows(query)]


async def _schedule_ids(temporal: Client) -> list[str]:
    return [s.id async for s in await temporal.list_schedules()]
