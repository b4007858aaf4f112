"""Scheduled agents: an agent run, or a message to a session, on a cron or an
interval, as a Temporal Schedule (``AgentClient.schedule``; ``ratchet schedules``).

Each firing is a workflow the schedule starts, so it shows in the Temporal UI
under the schedule, and Temporal's own ``TemporalScheduledById`` search attribute
finds a schedule's runs (``schedule_runs_query``). A message to a session is delivered by
a small workflow per firing (``ratchet.workflows._scheduled_send``), keyed by its
scheduled time, so a retried delivery never sends the message twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

from temporalio.client import (
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleHandle,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
    WorkflowExecutionStatus,
)
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.service import RPCError, RPCStatusCode

from ratchet.errors import InvalidInputError
from ratchet.types import new_id
from ratchet.wire import (
    AGENT_NAME,
    AGENT_RUN_WORKFLOW,
    AGENT_STATUS,
    SCHEDULED_SEND_WORKFLOW,
    RunInput,
    RunOptions,
    ScheduledMessage,
    new_messages,
    schedule_note,
)

if TYPE_CHECKING:
    from ._client import AgentClient

CATCHUP_WINDOW = timedelta(minutes=5)
"""How late a missed firing may still run (after an outage): Temporal's default is a
year, which would start a backlog of agent runs at once."""


def schedule_runs_query(schedule_id: str) -> str:
    """The list filter for a schedule's runs (Temporal sets ``TemporalScheduledById``)."""
    return f'TemporalScheduledById="{schedule_id}"'


async def create_schedule(
    client: AgentClient,
    schedule_id: str,
    prompt: str,
    *,
    agent: str | None = None,
    session: str | None = None,
    cron: str | Sequence[str] = (),
    every: timedelta | None = None,
    overlap: ScheduleOverlapPolicy = ScheduleOverlapPolicy.SKIP,
    catchup_window: timedelta = CATCHUP_WINDOW,
    jitter: timedelta | None = None,
    paused: bool = False,
    note: str | None = None,
    options: RunOptions | None = None,
) -> ScheduleHandle:
    """See ``AgentClient.schedule``."""
    crons = [cron] if isinstance(cron, str) else list(cron)
    _check(schedule_id, agent, session, crons, every, catchup_window, jitter)
    if session is not None:
        agent = await _open_session_agent(client, session)
        action = ScheduleActionStartWorkflow(
            SCHEDULED_SEND_WORKFLOW,
            ScheduledMessage(session_id=session, prompt=_text(prompt)),
            id=schedule_id,
            task_queue=client.task_queue,
            static_summary=f"scheduled message to {session}: {_excerpt(prompt)}",
        )
        what = f"message to session {session}"
    else:
        assert agent is not None
        options = options or RunOptions()
        options.check()
        action = ScheduleActionStartWorkflow(
            AGENT_RUN_WORKFLOW,
            RunInput(agent=agent, messages=new_messages(prompt, new_id), options=options),
            id=schedule_id,
            task_queue=client.task_queue,
            typed_search_attributes=TypedSearchAttributes(
                [
                    SearchAttributePair(AGENT_NAME, agent),
                    SearchAttributePair(AGENT_STATUS, "RUNNING"),
                ]
            ),
            static_summary=f"{agent} (scheduled): {_excerpt(prompt)}",
        )
        what = f"run of {agent}"
    schedule = Schedule(
        action=action,
        spec=ScheduleSpec(
            cron_expressions=crons,
            intervals=[ScheduleIntervalSpec(every=every)] if every else [],
            jitter=jitter,
        ),
        policy=SchedulePolicy(overlap=overlap, catchup_window=catchup_window),
        state=ScheduleState(paused=paused, note=note or schedule_note(f"Ratchet: {what}")),
    )
    try:
        return await client.temporal.create_schedule(
            schedule_id,
            schedule,
            memo={
                "agent": agent,
                "session": session,
                "prompt": _excerpt(prompt),
                "when": ", ".join(crons) if crons else f"every {span(every)}",
            },
        )
    except ScheduleAlreadyRunningError:
        raise InvalidInputError(
            f"A schedule {schedule_id!r} exists already: pick another id, or delete it first "
            f"(ratchet schedules delete {schedule_id})."
        ) from None
    except RPCError as e:
        if e.status != RPCStatusCode.INVALID_ARGUMENT:
            raise
        raise InvalidInputError(f"Temporal refused schedule {schedule_id!r}: {e.message}") from None


def _check(
    schedule_id: str,
    agent: str | None,
    session: str | None,
    crons: list[str],
    every: timedelta | None,
    catchup_window: timedelta,
    jitter: timedelta | None,
) -> None:
    if not schedule_id.strip():
        raise InvalidInputError("Give the schedule an id, e.g. 'morning-report'.")
    if (agent is None) == (session is None):
        raise InvalidInputError(
            "Name what the schedule does: agent='name' starts a run of that agent each "
            "time, session='id' sends the prompt to that open session (one, not both)."
        )
    if bool(crons) == (every is not None):
        raise InvalidInputError(
            "Say when: cron='0 7 * * *' (or a list of them), or every=timedelta(hours=1); "
            "one of the two."
        )
    if every is not None and every < timedelta(seconds=1):
        raise InvalidInputError(
            f"every (--every) is {span(every)}: a schedule fires at most once a second."
        )
    if catchup_window < timedelta(seconds=10):
        raise InvalidInputError(
            f"catchup_window (--catchup) is {span(catchup_window)}: Temporal needs at "
            "least 10 seconds."
        )
    if jitter is not None and jitter < timedelta(0):
        raise InvalidInputError(f"jitter (--jitter) is negative: {span(jitter)}.")


async def _open_session_agent(client: AgentClient, session: str) -> str:
    """The agent of ``session``, refusing one that is closed or does not exist."""
    try:
        description = await client.temporal.get_workflow_handle(session).describe()
    except RPCError as e:
        if e.status != RPCStatusCode.NOT_FOUND:
            raise
        raise InvalidInputError(f"There is no session {session!r} to send to.") from None
    if description.status != WorkflowExecutionStatus.RUNNING:
        raise InvalidInputError(
            f"Session {session!r} is closed: a schedule can only send to an open one."
        )
    agents = description.typed_search_attributes.get(AGENT_NAME)
    return agents or "?"


def span(duration: timedelta | None) -> str:
    """A duration as a person writes it: 90s, 15m, 1h, 1d (or 1h30m)."""
    if duration is None:
        return "none"
    left, parts = duration.total_seconds(), []
    if left < 0:
        return "-" + span(-duration)
    for unit, seconds in (("d", 86400), ("h", 3600), ("m", 60)):
        if left >= seconds:
            parts.append(f"{int(left // seconds)}{unit}")
            left %= seconds
    if left or not parts:
        parts.append(f"{left:g}s")
    return "".join(parts)


def _text(prompt: str) -> str:
    if not isinstance(prompt, str) or not prompt.strip():
        raise InvalidInputError("The scheduled prompt is empty: give the text to send.")
    return prompt


def _excerpt(prompt: str, limit: int = 80) -> str:
    text = " ".join(prompt.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
