"""Each turn carries a fairness key (the owner, else the tenant, else the agent;
or the run's own) and weight: a backlogged turn queue dispatches each key its share
(the dev server runs with Temporal's fairness on)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType

from ratchet import cli
from ratchet.agents import RunContext, ScriptedModel, ToolCallingAgent
from ratchet.cli._fleet_queue import set_limit
from ratchet.client import AgentClient, RunHandle
from ratchet.devserver import DevServer
from ratchet.errors import InvalidOptionsError
from ratchet.types import Message
from ratchet.wire import FAIRNESS_KEY_BYTES, RunOptions, SessionOptions, fairness_key
from ratchet.worker import build_worker

from ..history import of_type, until

FLOOD, GOLD = 24, 24
FIRST = 20
RATE = 10.0
KEY_RATE = 4.0
"""Turn dispatches per second the fairness-off queue is limited to."""
"""The first dispatches counted: while both owners are backlogged."""


ONE_PARTITION = [
    *("--dynamic-config-value", "matching.numTaskqueueReadPartitions=1"),
    *("--dynamic-config-value", "matching.numTaskqueueWritePartitions=1"),
]
"""Each partition of a queue (4 by default) shares out its own backlog: one makes
the shares exact enough to tell weight 3 from weight 1 in 20 dispatches."""


@pytest.fixture(scope="module")
def fair_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    log_dir: Path = tmp_path_factory.mktemp("temporal-fair")
    with DevServer.start(ui=False, log_dir=log_dir, extra_args=ONE_PARTITION) as server:
        yield server


@pytest.fixture
async def fair_client(fair_server: DevServer) -> AsyncIterator[AgentClient]:
    yield await AgentClient.connect(fair_server.address)


@pytest.fixture(scope="module")
def unfair_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """A server without fairness (Temporal 1.32's default), one partition per queue."""
    log_dir: Path = tmp_path_factory.mktemp("temporal-unfair")
    with DevServer.start(
        ui=False, log_dir=log_dir, fairness=False, extra_args=ONE_PARTITION
    ) as server:
        yield server


@pytest.fixture
async def unfair_client(unfair_server: DevServer) -> AsyncIterator[AgentClient]:
    yield await AgentClient.connect(unfair_server.address)


def recording_agent(calls: list[str], times: list[float] | None = None) -> ToolCallingAgent:
    def answer(messages: Sequence[Message], context: RunContext) -> str:
        calls.append(messages[-1].text.split()[0])  # the owner's name leads the prompt
        if times is not None:
            times.append(time.monotonic())
        return "done"

    return ToolCallingAgent(ScriptedModel(answer))


async def scheduled(run: RunHandle) -> bool:
    history = [e async for e in run.workflow.fetch_history_events()]
    return bool(of_type(history, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED))


async def backlog(client: AgentClient, owner: str, count: int, options: RunOptions) -> list:
    runs = [
        await client.start_run("echo", f"{owner} {n}", owner=owner, options=options)
        for n in range(count)
    ]
    for run in runs:  # each turn waits in the turn queue before the next owner's
        await until(lambda run=run: scheduled(run), bool)
    return runs


async def flood_then_gold(
    client: AgentClient,
    limit: float | None = None,
    times: list[float] | None = None,
    fleet: Sequence[str] = (),
) -> list[str]:
    """24 turns of owner "flood" (weight 1) wait in the queue, then 24 of owner
    "gold" (weight 3); one worker takes one turn at a time (under the queue's rate
    ``limit`` if given, after ``ratchet fleet FLEET... --task-queue <turns>``). The
    owners in the order their turns ran (and when, in ``times``)."""
    workflows, turns = f"fair-wf-{uuid.uuid4().hex[:8]}", f"fair-turns-{uuid.uuid4().hex[:8]}"
    calls: list[str] = []
    agents = {"echo": lambda: recording_agent(calls, times)}
    runner = AgentClient(client.temporal, task_queue=workflows)
    if limit is not None:
        await set_limit(client.temporal, turns, limit, "test")
    if fleet:
        address = ["--address", client.temporal.service_client.config.target_host]
        command = ["fleet", *fleet, *address, "--task-queue", turns]
        assert await asyncio.to_thread(cli.main, command) == 0
    async with build_worker(runner, agents, task_queue=workflows):
        floods = await backlog(runner, "flood", FLOOD, RunOptions(task_queue=turns))
        golds = await backlog(
            runner, "gold", GOLD, RunOptions(task_queue=turns, fairness_weight=3.0)
        )
        async with build_worker(
            runner, agents, task_queue=turns, max_concurrent_turns=1, rate_limited=True
        ):
            await asyncio.gather(*(run.result() for run in floods + golds))
    assert len(calls) == FLOOD + GOLD
    return calls


async def test_a_weighted_owner_gets_its_share_of_a_backlogged_turn_queue(
    fair_client: AgentClient,
):
    """In FIFO order gold would wait for the whole flood; with the keys it takes
    about 3 of every 4 dispatches."""
    first = (await flood_then_gold(fair_client))[:FIRST]
    assert 12 <= first.count("gold") <= 18, first  # 15 expected; FIFO gives none, 1:1 10


async def test_an_operator_pins_a_keys_weight_above_what_its_runs_ask_for(
    fair_client: AgentClient,
):
    """`ratchet fleet weight --key flood --weight 9`: flood now outweighs gold (whose
    runs ask for 3) three to one, and takes about 15 of the first 20 dispatches."""
    pinned = ["weight", "--key", "flood", "--weight", "9"]
    first = (await flood_then_gold(fair_client, fleet=pinned))[:FIRST]
    assert first.count("gold") <= 8, first  # 5 expected; 15 without the pin


async def test_a_per_key_limit_paces_each_key_and_not_the_queue(fair_client: AgentClient):
    """`ratchet fleet limit --per-key --rps 4`: flood's turns start at most 4 a second
    (a key's limit is scaled by its weight: gold's, 3, is let through in bursts too
    uneven to time here), while the two owners together go faster than that."""
    times: list[float] = []
    per_key = ["limit", "--per-key", "--rps", str(KEY_RATE)]
    calls = await flood_then_gold(fair_client, times=times, fleet=per_key)
    started = [t for t, who in zip(times, calls, strict=True) if who == "flood"]
    rate = steady_rate(started)
    assert rate <= KEY_RATE * 1.15, (rate, [round(t - started[0], 2) for t in started])
    # A queue-wide 4/s would take about (48 - 4) / 4 = 11 s; flood alone takes about 5.
    assert times[-1] - times[0] < (FLOOD + GOLD - KEY_RATE) / KEY_RATE * 0.8


async def test_with_fairness_off_the_keys_are_harmless_and_a_rate_limit_still_holds(
    unfair_client: AgentClient,
):
    """A server without fairness dispatches in order: every turn, keyed and weighted,
    still runs, and the queue's rate limit still paces them."""
    times: list[float] = []
    calls = await flood_then_gold(unfair_client, limit=RATE, times=times)
    assert calls[:FLOOD] == ["flood"] * FLOOD  # FIFO: the weight does not apply
    # The server's bucket lets about a second's worth through at once, then paces.
    assert steady_rate(times) <= RATE * 1.15, [round(t - times[0], 2) for t in times]


def steady_rate(times: list[float]) -> float:
    """Starts per second over the last third: the server's bucket first lets through
    a burst of a second's worth or more at once."""
    last = times[len(times) * 2 // 3 :]
    return (len(last) - 1) / (last[-1] - last[0])


async def turn_priority(run: RunHandle) -> tuple[str, float]:
    history = [e async for e in run.workflow.fetch_history_events()]
    scheduled = of_type(history, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    priority = scheduled[0].activity_task_scheduled_event_attributes.priority
    return priority.fairness_key, priority.fairness_weight


async def test_a_turns_key_is_the_runs_own_else_owner_else_tenant_else_agent(
    agent_client: AgentClient,
):
    calls: list[str] = []
    long_owner = "user:" + "x" * 100
    async with build_worker(agent_client, {"echo": lambda: recording_agent(calls)}):
        runs = [
            await agent_client.start_run(
                "echo", "a", owner="alice", tenant="acme", options=RunOptions(fairness_key="k")
            ),
            await agent_client.start_run("echo", "b", owner="alice", tenant="acme"),
            await agent_client.start_run("echo", "c", tenant="acme"),
            await agent_client.start_run("echo", "d", options=RunOptions(fairness_weight=2.5)),
            await agent_client.start_run("echo", "e", owner=long_owner),
        ]
        await asyncio.gather(*(run.result() for run in runs))
        keys = [await turn_priority(run) for run in runs]
    assert keys[:4] == [("k", 0.0), ("alice", 0.0), ("acme", 0.0), ("echo", 2.5)]
    assert keys[4][0] == fairness_key(long_owner) and len(keys[4][0]) == FAIRNESS_KEY_BYTES


def test_a_long_key_is_hashed_within_64_bytes_and_stays_distinct():
    long_a, long_b = "tenant-é" * 20 + "a", "tenant-é" * 20 + "b"
    assert fairness_key("alice") == "alice"
    assert fairness_key("x" * FAIRNESS_KEY_BYTES) == "x" * FAIRNESS_KEY_BYTES
    for key in (fairness_key(long_a), fairness_key(long_b)):
        assert len(key.encode()) <= FAIRNESS_KEY_BYTES
        assert key.startswith("tenant-é")  # readable in the UI and the metrics
    assert fairness_key(long_a) != fairness_key(long_b)


def test_fairness_options_are_checked_where_they_are_written():
    with pytest.raises(InvalidOptionsError, match="fairness_weight=0.0, but it must be between"):
        RunOptions(fairness_weight=0.0)
    with pytest.raises(InvalidOptionsError, match="fairness_key=' ', but it must not be blank"):
        SessionOptions(run=RunOptions(fairness_key=" "))
    with pytest.raises(InvalidOptionsError, match=r"run=RunOptions\(fairness_key=...\)"):
        SessionOptions(fairness_key="acme")  # type: ignore[call-arg]
