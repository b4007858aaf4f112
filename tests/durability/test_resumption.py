"""A worker SIGKILLed during a long model call, with default options: the turn
resumes elsewhere once its heartbeat times out (a 6 s call sent no heartbeat; a 30 s
one did). With no heartbeat timeout, it resumes once its turn_timeout runs out."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType, TimeoutType

from ratchet.client import AgentClient
from ratchet.wire import RunOptions

from ..history import events, of_type
from ..logged_agents import EventLog
from .test_durability import wait_for_event

RESUMED_WITHIN = 15.0
"""Seconds from the kill to the model call's retry on the other worker: the default
heartbeat timeout (10 s) counted from the attempt's start, the retry interval (1 s)
and the dispatch, with margin."""


@pytest.mark.parametrize(
    ("plan", "heard"),
    [
        # 3 s into a 6 s call: no heartbeat yet (the old default of 3 s sent one every
        # 1.8 s), so the retry got no details of the killed attempt.
        ({"seconds": 6, "kill_after": 3}, False),
        # 17 s into a 30 s call, past its heartbeats at 8 s and 16 s (one per 0.8 x the
        # 10 s timeout): the retry got the last one's details. bench/kill_points.py
        # kills at 20 random points of each; the retry's call takes 1 s here.
        ({"seconds": 30, "kill_after": 17, "retry_seconds": 1}, True),
    ],
    ids=["6s-call", "30s-call"],
)
async def test_a_worker_killed_during_a_long_model_call_resumes_elsewhere_in_time(
    agent_client: AgentClient, worker_processes, event_log: Path, plan: dict, heard: bool
):
    log = EventLog(event_log)
    first = worker_processes()
    handle = await agent_client.start_run("thinker", json.dumps(plan))
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
    assert retried["heard"] is heard  # whether the killed attempt's heartbeat reached it


async def test_a_turn_with_no_heartbeat_timeout_resumes_after_its_turn_timeout(
    agent_client: AgentClient, worker_processes, event_log: Path
):
    # heartbeat_timeout=None: the peers' price, no heartbeat, and a dead worker's
    # turn retried once its start-to-close timeout (turn_timeout) runs out.
    log = EventLog(event_log)
    first = worker_processes()
    turn_timeout = 12.0
    options = RunOptions(heartbeat_timeout=None, turn_timeout=timedelta(seconds=turn_timeout))
    plan = json.dumps({"seconds": 6, "kill_after": 3})
    handle = await agent_client.start_run("thinker", plan, options=options)
    began = await wait_for_event(log, lambda r: r["kind"] == "model" and r["pid"] == first.pid)
    second = worker_processes()
    await wait_for_event(log, lambda r: r["kind"] == "kill")
    retried = await wait_for_event(log, lambda r: r["kind"] == "model" and r["pid"] == second.pid)

    assert (await handle.result()).output == "thought"
    assert retried["attempt"] == 2
    # Not before the attempt's turn_timeout ran out (it started just before the call
    # did); soon after (the retry interval, 1 s, and the dispatch).
    assert turn_timeout - 1 <= retried["time"] - began["time"] <= turn_timeout + 5
    (started,) = of_type(await events(handle), EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED)
    failure = started.activity_task_started_event_attributes.last_failure
    assert failure.timeout_failure_info.timeout_type == TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE
    assert retried["heard"] is False
