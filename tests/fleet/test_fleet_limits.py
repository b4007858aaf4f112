"""A fleet against a rate-limited provider: two worker processes (``--rate-limited``)
take turns from one queue on a dev server with fairness on, each turn one call to
``OpenAIServer`` limited to so many requests a second. The queue's limit
(``ratchet fleet limit``) holds the fleet within the provider's, a weighted key gets
its share, and a storm of 429s (no queue limit) fails no send."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType

from ratchet.agents import ToolCallingAgent
from ratchet.agents.models import OpenAIChatModel
from ratchet.cli import main
from ratchet.client import AgentClient, RunHandle
from ratchet.devserver import DevServer
from ratchet.testing import OpenAIServer, WorkerProcess
from ratchet.wire import RunOptions
from ratchet.worker import build_worker

from ..conftest import ROOT
from ..history import of_type, until
from ..logged_agents import AGENTS
from ..workflows.test_turn_fairness import ONE_PARTITION, scheduled

pytestmark = pytest.mark.slow  # worker processes

LIMIT = 4.0
"""The queue's limit, turns a second: below the provider's, as docs/fleet.md advises."""
PROVIDER = 5.0
"""The stub provider's limit, requests a second."""
FLOOD = GOLD = 20
STORM = 20
FIRST = 20


@pytest.fixture(scope="module")
def fleet_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    # One partition: each partition shares out its own backlog (test_turn_fairness.py).
    log_dir: Path = tmp_path_factory.mktemp("temporal-fleet")
    with DevServer.start(ui=False, log_dir=log_dir, extra_args=ONE_PARTITION) as server:
        yield server


@asynccontextmanager
async def fleet(server: DevServer, stub: OpenAIServer, turns: str) -> AsyncIterator[None]:
    """Two worker processes taking turns from ``turns``, calling ``stub``."""
    env = {"OPENAI_BASE_URL": stub.base_url, "OPENAI_API_KEY": "test", "PYTHONPATH": str(ROOT)}
    workers = [
        WorkerProcess(
            server, turns, "tests.logged_agents:AGENTS", "--rate-limited", env=env, cwd=ROOT
        )
        for _ in range(2)
    ]
    try:
        for worker in workers:
            await asyncio.to_thread(worker.wait_ready)
        yield
    finally:
        for worker in workers:
            await asyncio.to_thread(worker.stop)


async def fleet_limit(
    server: DevServer, queue: str, *rate: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ratchet fleet limit`` (it runs its own event loop: in a thread)."""
    monkeypatch.setenv("TEMPORAL_ADDRESS", server.address)
    argv = ["fleet", "limit", "--task-queue", queue, *rate]
    assert await asyncio.to_thread(main, argv) == 0


async def backlog(
    client: AgentClient, key: str, count: int, options: RunOptions
) -> list[RunHandle]:
    runs = [await client.start_run("openai", f"{key} {n}", options=options) for n in range(count)]
    for run in runs:  # queued before the next key's, and before any worker takes one
        await until(lambda run=run: scheduled(run), bool)
    return runs


def first_word(request) -> str:
    return request.body["messages"][-1]["content"].split()[0]


async def test_the_fleet_stays_within_the_limit_and_a_weighted_key_gets_its_share(
    fleet_server: DevServer, monkeypatch: pytest.MonkeyPatch
):
    """20 turns of key "flood" (weight 1) wait in the queue, then 20 of "gold"
    (weight 3); then two worker processes start. In arrival order gold would wait for
    the whole flood; with the keys it takes about 3 of every 4 dispatches."""
    workflows, turns = f"fleet-wf-{uuid.uuid4().hex[:8]}", f"fleet-turns-{uuid.uuid4().hex[:8]}"
    client = await AgentClient.connect(fleet_server.address, task_queue=workflows)
    await fleet_limit(fleet_server, turns, "--rps", f"{LIMIT:g}", monkeypatch=monkeypatch)
    with OpenAIServer.answering("done", rate_limit=PROVIDER, record=True) as stub:
        async with build_worker(client, AGENTS, task_queue=workflows):
            floods = await backlog(
                client, "flood", FLOOD, RunOptions(task_queue=turns, fairness_key="flood")
            )
            golds = await backlog(
                client,
                "gold",
                GOLD,
                RunOptions(task_queue=turns, fairness_key="gold", fairness_weight=3.0),
            )
            async with fleet(fleet_server, stub, turns):
                results = await asyncio.gather(*(run.result() for run in floods + golds))
    assert all(r.output == "done" for r in results)
    keys = [first_word(r) for r in stub.requests]
    assert keys[:FIRST].count("gold") >= 13, keys  # 15 expected; 1:1 gives 10, FIFO 0
    # The server lets a burst through at once (4-6 turns here), then holds the rate,
    # whichever process takes the turn: the provider sees no more than that.
    first = stub.answers[0].at
    assert all(a.at - first < 1 for a in stub.answers if a.status == 429), timeline(stub)
    steady = [a.at for a in stub.answers if a.at - first >= 1]
    rate = (len(steady) - 1) / (steady[-1] - steady[0])
    assert rate <= LIMIT * 1.1, timeline(stub)


def timeline(stub: OpenAIServer) -> str:
    return str([(round(a.at - stub.answers[0].at, 3), a.status) for a in stub.answers])


async def test_a_429_storm_without_a_queue_limit_fails_no_send(fleet_server: DevServer):
    """20 sessions send at once to a provider that takes 1 request a second, with no
    limit on the queue: the turns meet 429s and wait for their retry-after, some more
    often than the default 10 attempts (a 429 is a wait, not a failed attempt); every
    send is answered."""
    queue = f"fleet-storm-{uuid.uuid4().hex[:8]}"
    client = await AgentClient.connect(fleet_server.address, task_queue=queue)
    with OpenAIServer.answering("done", rate_limit=1) as stub:
        async with fleet(fleet_server, stub, queue):
            sessions = [
                await client.start_session("openai", tenant=f"t{n % 3}") for n in range(STORM)
            ]
            answers = await asyncio.gather(*(s.send(f"hello {n}") for n, s in enumerate(sessions)))
    assert [a.output for a in answers] == ["done"] * STORM
    assert stub.ok == STORM
    tries = [await last_attempt(client, s.id) for s in sessions]
    assert max(tries) > RunOptions().max_attempts, (tries, timeline(stub))  # a storm it was


async def last_attempt(client: AgentClient, session_id: str) -> int:
    """The attempt the session's turn succeeded on."""
    handle = client.temporal.get_workflow_handle(session_id)
    history = [e async for e in handle.fetch_history_events()]
    (started,) = of_type(history, EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED)
    return started.activity_task_started_event_attributes.attempt


async def test_a_turns_wait_behind_the_queues_limit_does_not_count_as_throttled(
    fleet_server: DevServer, monkeypatch: pytest.MonkeyPatch
):
    """The provider asks for 0.1s three times; each retry then waits about 2s behind
    the queue's limit of 0.5 turns a second. Only the provider's 0.1s (and the
    attempts' run time) count against the turn_timeout of 2s: the turn succeeds."""
    workflows, turns = f"fleet-wf-{uuid.uuid4().hex[:8]}", f"fleet-turns-{uuid.uuid4().hex[:8]}"
    client = await AgentClient.connect(fleet_server.address, task_queue=workflows)
    await fleet_limit(fleet_server, turns, "--rps", "0.5", monkeypatch=monkeypatch)
    with OpenAIServer() as stub:
        for _ in range(3):
            stub.error(429, "Rate limit reached.", headers={"retry-after": "0.1"})
        stub.text("done")
        model = OpenAIChatModel("gpt-test", base_url=stub.base_url, api_key="k")
        agents = {"oa": ToolCallingAgent(model, [])}
        options = RunOptions(task_queue=turns, turn_timeout=timedelta(seconds=2))
        async with (
            build_worker(client, agents, task_queue=workflows),
            build_worker(client, agents, task_queue=turns, rate_limited=True),
        ):
            run = await client.start_run("oa", "hi", options=options)
            result = await run.result()
            (turn,) = await run.turns()
    assert result.output == "done"
    starts = [a.started_at for a in turn.attempts if a.started_at is not None]
    assert (starts[-1] - starts[0]).total_seconds() > 4  # the queue held the retries back
    assert all(0.1 <= (a.throttled_s or 0) < 1 for a in turn.attempts[:3]), turn.attempts
