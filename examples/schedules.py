"""Scheduled agents: a run on a cron, and a message to a session on a schedule.

Each is a Temporal Schedule, visible in the Temporal UI under Schedules; each
firing is a workflow, found by Temporal's own ``TemporalScheduledById``.
"""

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

from temporalio.client import ScheduleBackfill, ScheduleOverlapPolicy

import ratchet
from ratchet import AgentClient, ScriptedModel, ToolCallingAgent, build_worker
from ratchet.client import schedule_runs_query


def reporter() -> ToolCallingAgent:
    return ToolCallingAgent(ScriptedModel(["Nothing broke overnight."] * 10), [])


async def finished(client: AgentClient, schedule_id: str, count: int) -> None:
    """Wait until ``count`` of the schedule's firings have completed."""
    query = schedule_runs_query(schedule_id) + ' AND ExecutionStatus="Completed"'
    while (await client.temporal.count_workflows(query)).count < count:  # noqa: ASYNC110
        await asyncio.sleep(0.2)  # the server's list, polled


async def main() -> int:
    client = await AgentClient.connect(task_queue="schedules-example")
    suffix = uuid.uuid4().hex[:6]  # schedule ids are unique in a namespace
    async with build_worker(client, {"reporter": reporter}):
        # A run of `reporter` at 07:00 UTC on weekdays; fire it once now, too.
        morning = await client.schedule(
            f"morning-report-{suffix}",
            "Summarise last night.",
            agent="reporter",
            cron="0 7 * * 1-5",
            overlap=ScheduleOverlapPolicy.SKIP,
        )
        await morning.trigger()
        # A message to a session every day; the last two days are backfilled.
        session = await client.start_session("reporter")
        daily = await client.schedule(
            f"standup-{suffix}",
            "Anything new since yesterday?",
            session=session.id,
            every=timedelta(days=1),
        )
        now = datetime.now(UTC)
        await daily.backfill(
            ScheduleBackfill(now - timedelta(days=2), now, ScheduleOverlapPolicy.BUFFER_ALL)
        )
        await finished(client, morning.id, 1)
        await finished(client, daily.id, 2)
        thread = await session.thread()
        asked = [m.text for m in thread.messages if m.role == "user"]
        print(f"{morning.id} ran; session {session.id} was asked: {asked}")
        for schedule in (morning, daily):
            await schedule.delete()
        await session.close()
    return 0


if __name__ == "__main__":
    ratchet.run_main(main)
