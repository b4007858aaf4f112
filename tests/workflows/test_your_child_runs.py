"""A workflow of yours that runs an agent with a sub-agent and starts a run as a
child itself: moving its own child to ``AgentRun`` behind a patch of its own (as
docs/deploying.md says) keeps the histories it recorded before replaying."""

from __future__ import annotations

from collections.abc import Callable

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ratchet.types import Message
    from ratchet.wire import AGENT_RUN_WORKFLOW, RUN_WORKFLOW, RunInput, RunResult
    from ratchet.workflows import run_agent

from ratchet.client import AgentClient
from ratchet.deploy import replay
from ratchet.worker import build_worker

from ..durability.test_run_type_upgrade import team


async def orchestrate(own_first: bool, kind: Callable[[], str]) -> str:
    """The lead (whose sub-agent asks the sub-agents' patch), and a run of our own."""
    own = await own_run(kind()) if own_first else ""
    lead = await run_agent("lead", "explain tides")
    own = own or await own_run(kind())
    return f"{lead.output} / {own}"


async def own_run(kind: str) -> str:
    result = await workflow.execute_child_workflow(
        kind,
        RunInput(agent="researcher", messages=[Message.user("why?")]),
        id=f"{workflow.info().workflow_id}-own",
        result_type=RunResult,
    )
    return result.output


@workflow.defn(name="Orchestration", sandboxed=False)
class AsBefore:
    @workflow.run
    async def run(self, own_first: bool) -> str:
        return await orchestrate(own_first, lambda: RUN_WORKFLOW)


def behind_own_patch() -> str:
    return AGENT_RUN_WORKFLOW if workflow.patched("myapp-runs-as-agent-run") else RUN_WORKFLOW


@workflow.defn(name="Orchestration", sandboxed=False)
class OwnPatch:
    @workflow.run
    async def run(self, own_first: bool) -> str:
        return await orchestrate(own_first, behind_own_patch)


async def test_your_child_runs_move_to_agent_run_behind_a_patch_of_your_own(
    agent_client: AgentClient,
):
    temporal, queue = agent_client.temporal, agent_client.task_queue
    histories = []
    async with build_worker(agent_client, team(), workflows=[AsBefore]):
        for own_first in (False, True):
            handle = await temporal.start_workflow(
                AsBefore.run, own_first, id=f"orchestration-{own_first}-{queue}", task_queue=queue
            )
            assert await handle.result() == "report: moon / moon"
            histories.append(await handle.fetch_history())
    assert (await replay(histories, workflows=[OwnPatch])).ok
