"""A scheduled run whose agent no worker hosts: its schedule pauses, so it does not
fail a run at every firing (a schedule starts workflows by name; only a turn finds
out that no worker on its task queue hosts the agent)."""

from __future__ import annotations

from temporalio import activity
from temporalio.common import SearchAttributeKey
from temporalio.service import RPCError, RPCStatusCode

from ratchet.errors import AgentNotFoundError
from ratchet.wire import schedule_note

SCHEDULED_BY = SearchAttributeKey.for_keyword("TemporalScheduledById")
UNHOSTED_NOTE = (
    "Ratchet: no worker on task queue {queue} hosts agent {agent} (its runs fail); host "
    "it, or delete this schedule and make one that names a hosted agent, then unpause"
)


async def pause_its_schedule(error: AgentNotFoundError) -> str:
    """Pause the schedule that started this turn's run, if one did; returns what to
    add to the run's failure."""
    info = activity.info()
    client = activity.client()
    if info.workflow_id is None:
        return ""
    try:
        run = await client.get_workflow_handle(info.workflow_id).describe()
        schedule_id = run.typed_search_attributes.get(SCHEDULED_BY)
        if schedule_id is None:
            return ""
        note = UNHOSTED_NOTE.format(queue=info.task_queue, agent=error.name)
        await client.get_schedule_handle(schedule_id).pause(note=schedule_note(note))
    except RPCError as e:  # the run's failure says what is wrong in any case
        if e.status != RPCStatusCode.NOT_FOUND:
            activity.logger.warning(f"Could not pause the schedule of {info.workflow_id}: {e}")
        return ""
    return f" Its schedule {schedule_id} is paused."
