"""Record the histories the replay tests replay.

    python -m tests.record_histories

Run it when a workflow changes on purpose (behind ``workflow.patched`` or as a new
workflow type) and commit the new files next to the old ones, never instead of them:
it writes only histories that are not recorded yet.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from ratchet.agents import ScriptedModel
from ratchet.agents.compaction import Summarize, SummarizingAgent
from ratchet.devserver import DevServer
from ratchet.errors import RunFailedError
from ratchet.worker import build_worker
from ratchet.workflows import AgentClient, RunOptions

from .state_agents import StepAgent
from .test_agent_state import plan_agents
from .test_compaction import paging_agent
from .test_sessions import Echo
from .test_user_workflow import agents
from .user_workflows import ResearchAndReview, SharedPlan

HISTORIES = Path(__file__).parent / "histories"


async def record() -> None:
    with DevServer.start(ui=False) as server:
        client = await AgentClient.connect(server.address, task_queue="record")
        compacting = {
            "pager": lambda: paging_agent(6, []),
            "summarizer": lambda: SummarizingAgent(ScriptedModel(lambda m, c: "summary")),
        }
        stateful = {"stateful": lambda: StepAgent(_fill_cart, _checkout), "echo": Echo}
        async with build_worker(
            client,
            {**agents(), **compacting, **plan_agents(), **stateful},
            workflows=[ResearchAndReview, SharedPlan],
        ):
            completed = await client.start_run("researcher", "What is Temporal?")
            await completed.result()
            failed = await client.start_run("researcher", "loop", options=RunOptions(max_turns=1))
            try:
                await failed.result()
            except RunFailedError:
                pass
            user = await client.temporal.start_workflow(
                ResearchAndReview.run,
                "temporal",
                id=f"review-{uuid.uuid4().hex[:8]}",
                task_queue="record",
            )
            await user.result()
            by_reference = await client.start_run(
                "researcher",
                "What is Temporal?",
                options=RunOptions(thread_mode="reference"),
            )
            await by_reference.result()
            compacted = await client.start_run(
                "pager",
                "Read the pages.",
                options=RunOptions(
                    compaction=Summarize(max_messages=6, keep_turns=1),
                    continue_as_new_after_turns=4,
                ),
            )
            await compacted.result()
            fast = await client.start_run(
                "researcher", "What is Temporal?", options=RunOptions(fast=True)
            )
            await fast.result()
            with_state = await client.start_run("stateful", "Buy a book.")
            await with_state.result()
            shared = await client.temporal.start_workflow(
                SharedPlan.run, id=f"shared-{uuid.uuid4().hex[:8]}", task_queue="record"
            )
            await shared.result()
            session = await client.start_session("echo")
            for text in ("hello", "again"):
                await session.send(text)
            await session.close()
            first_run = client.temporal.get_workflow_handle(compacted.id, run_id=compacted.run_id)
            for name, handle in [
                ("agent_run_completed", completed.workflow),
                ("agent_run_max_turns", failed.workflow),
                ("research_and_review", user),
                ("agent_run_thread_by_reference", by_reference.workflow),
                ("agent_run_summarize_then_continue_as_new", first_run),
                ("agent_run_continued", client.temporal.get_workflow_handle(compacted.id)),
                ("agent_run_fast_mode", fast.workflow),
                ("agent_run_with_state", with_state.workflow),
                ("shared_plan_with_conflict", shared),
                ("session_two_runs_then_closed", session.workflow),
                ("session_run_with_thread_base", client.get_run(f"{session.id}-run-2").workflow),
            ]:
                if (HISTORIES / f"{name}.json").exists():
                    continue
                history = await handle.fetch_history()
                (HISTORIES / f"{name}.json").write_text(history.to_json())
                print(f"recorded {name}: {len(history.events)} events")


async def _fill_cart(context) -> None:
    context.state.update("cart", ["book"])
    context.state.share("cart")


async def _checkout(context) -> str:
    context.state.update("cart", [*context.state.get("cart"), "receipt"])
    context.state.delete("draft")
    return "checked out"


if __name__ == "__main__":
    asyncio.run(record())
