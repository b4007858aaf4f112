"""A worker SIGKILLed during a long model call, with default options: the turn
resumes elsewhere once its heartbeat times out, and the call sent no heartbeat."""

from __future__ import annotations

import json
from pathlib import Path

from temporalio.api.enums.v1 import EventType, TimeoutType

from ratchet.client import AgentClient

from ..history import events, of_type
from ..logged_agents import EventLog
from .test_durability import wait_for_event

RESUMED_WITHIN = 15.0
"""Seconds from the kill to the model call's retry on the other worker: the default
heartbeat timeout (10 s) counted from the attempt's start, the retry interval (1 s)
and the dispatch, with margin."""


async def test_a_worker_killed_during_a_six_second_model_call_resumes_elsewhere_in_time(
    agent_client: AgentClient, worker_processes, event_log: Path
):
    log = EventLog(event_log)
    first = worker_processes()
    plan = json.dumps({"seconds": 6, "kill_after": 3})
    handle = await agent_client.start_run("thinker", plan)
    await wait_for_event(log, lambda r: r["kind"] == "model" and r["pid"] == first.pid)
    second = worker_processes()
    killed = await wait_for_event(log, lambda r: r["kind"] == "kill")
    retried = await wait_for_event(log, lambda r: r["kind"] == "model" and r["pid"] == second.pid)

    assert (await handle.result()).output == "thought"
    assert retried["attempt"] == 2
    assert retried["time"] - killed["time"] <= RESUMED_WITHIN
    (started,) = of_type(await events(handle), EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED)
    failure = started.activity_task_started_event_attributes.last_failure
    assert failure.timeout_failure_info.timeout_type == TimeoutType.TIMEOUT_TYPE_HEARTBEAT
    # The killed attempt sent no heartbeat in the 3 s it ran (the old default of 3 s
    # sent one every 1.8 s): the retry got no details of it.
    assert retried["heard"] is False
