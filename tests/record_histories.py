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

from ratchet.devserver import DevServer
from ratchet.errors import RunFailedError
from ratchet.worker import build_worker
from ratchet.workflows import AgentClient, RunOptions

from .test_user_workflow import agents
from .user_workflows import ResearchAndReview

HISTORIES = Path(__file__).parent / "histories"


async def record() -> None:
    with DevServer.start(ui=False) as server:
        client = await AgentClient.connect(server.address, task_queue="record")
        async with build_worker(client, agents(), workflows=[ResearchAndReview]):
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
            for name, handle in [
                ("agent_run_completed", completed.workflow),
                ("agent_run_max_turns", failed.workflow),
                ("research_and_review", user),
                ("agent_run_thread_by_reference", by_reference.workflow),
            ]:
                if (HISTORIES / f"{name}.json").exists():
                    continue
                history = await handle.fetch_history()
                (HISTORIES / f"{name}.json").write_text(history.to_json())
                print(f"recorded {name}: {len(history.events)} events")


if __name__ == "__main__":
    asyncio.run(record())
