"""Deploying a new build under running agents, with Temporal's worker versioning:
two builds of one app in real worker processes (``ratchet worker --deployment
--build-id``), moved between with ``ratchet deploy promote`` and its replay gate.

Sessions in flight keep answering through the switch, and their next messages run
on the new build; a single run waiting for an approval finishes on the build that
started it; the old build drains and its worker stops on SIGTERM; a build with an
incompatible workflow change is refused."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest
from temporalio.common import SearchAttributeKey

from ratchet.client import AgentClient
from ratchet.deploy import deployment_status
from ratchet.devserver import DevServer
from ratchet.testing import WorkerProcess

from ..conftest import ROOT
from ..deploy_app import Nightly, Reminder
from ..history import until

pytestmark = pytest.mark.slow

DEPLOYMENT = "shop"
QUEUE = "shop"
APP = ("--workflows", "tests.deploy_app:WORKFLOWS")
VERSION = SearchAttributeKey.for_keyword("TemporalWorkerDeploymentVersion")
# Drain status is shown only after a grace period and refreshed on an interval
# (3 minutes each by default).
FAST_DRAIN = [
    "--dynamic-config-value",
    'matching.wv.VersionDrainageStatusVisibilityGracePeriod="1s"',
    "--dynamic-config-value",
    'matching.wv.VersionDrainageStatusRefreshInterval="1s"',
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    server = DevServer.start(
        ui=False, log_dir=tmp_path_factory.mktemp("versioned"), extra_args=FAST_DRAIN
    )
    yield server
    server.stop()


@pytest.fixture
def worker(server: DevServer) -> Iterator[Callable[[str], WorkerProcess]]:
    """Starts a worker process serving ``build``; each is stopped after the test,
    whether it passed or not."""
    started: list[WorkerProcess] = []

    def start(build: str) -> WorkerProcess:
        env = {"PYTHONPATH": str(ROOT), "RATCHET_BUILD_ID": build, "RATCHET_DEPLOYMENT": DEPLOYMENT}
        process = WorkerProcess(server, QUEUE, "tests.deploy_app:AGENTS", *APP, env=env, cwd=ROOT)
        started.append(process)
        return process.wait_ready()

    yield start
    for process in started:
        if process.process.poll() is None:
            process.kill()


def ratchet(server: DevServer, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ratchet.cli", *args],
        cwd=ROOT,
        env={
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(ROOT),
            "TEMPORAL_ADDRESS": server.address,
            "RATCHET_DEPLOYMENT": DEPLOYMENT,
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def promote(
    server: DevServer, build: str, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    return ratchet(server, "deploy", "promote", build, "--task-queue", QUEUE, *APP, *args, **env)


async def build_of(client: AgentClient, workflow_id: str) -> str:
    """The build the workflow's current run is on (Temporal's own search attribute)."""
    described = await client.temporal.get_workflow_handle(workflow_id).describe()
    return (described.typed_search_attributes.get(VERSION) or "").rpartition(":")[2]


async def test_sessions_move_to_a_new_build_between_messages_and_runs_finish_where_they_started(
    server: DevServer, worker: Callable[[str], WorkerProcess]
):
    client = await AgentClient.connect(server.address, task_queue=QUEUE)
    old = worker("v1")
    first = promote(server, "v1")
    assert first.returncode == 0, first.stdout + first.stderr
    chat = await client.start_session("where")
    assert (await chat.send("hello")).final_response.text == "answered by v1"
    review = await client.start_session("careful")  # mid-run at the switch
    await review.submit("fix the bug")
    [asked] = await review.wait_for_pending()
    single = await client.start_run("careful", "ship it")
    [single_asked] = await single.wait_for_pending()
    reminder = await client.temporal.start_workflow(
        Reminder.run, "water the plants", id="reminder-1", task_queue=QUEUE
    )

    worker("v2")  # stopped with the test, after v1 has drained
    # Messages sent while the session moves: each is answered once, by one build.
    racing = [asyncio.ensure_future(chat.send(f"racing {i}")) for i in range(3)]
    second = await asyncio.to_thread(promote, server, "v2")
    assert second.returncode == 0, second.stdout + second.stderr
    raced = [(await r).final_response.text for r in racing]
    assert set(raced) <= {"answered by v1", "answered by v2"}
    assert "histories replayed against this code: all replay" in second.stdout
    assert "2 open session(s) on other builds woken" in second.stdout

    # The idle session moved at once; its next message runs on v2.
    await until(lambda: build_of(client, chat.id), lambda build: build == "v2")
    assert (await chat.send("and now?")).final_response.text == "answered by v2"
    said = [m.text for m in (await chat.thread()).messages if m.role == "user"]
    assert sorted(said[1:4]) == ["racing 0", "racing 1", "racing 2"] and len(said) == 5
    # The session mid-run finishes that run on v1, then moves: its next run is on v2.
    await review.approve(asked.action.id)
    await until(review.status, lambda s: s.status == "PENDING")
    first_reply = (await review.thread()).messages[-1].text
    assert first_reply == "shipped by v1, answered by v1"
    await review.submit("and the next one")
    [asked_again] = await review.wait_for_pending()
    await review.approve(asked_again.action.id)
    await until(review.status, lambda s: s.status == "PENDING" and s.runs == 2)
    assert (await review.thread()).messages[-1].text == "shipped by v2, answered by v2"
    # Single runs stay where they started.
    await single.approve(single_asked.action.id)
    assert (await single.result()).final_response.text == "shipped by v1, answered by v1"
    await reminder.signal(Reminder.done)
    assert await reminder.result() == "water the plants (on v1)"

    # Nothing is left on v1: it drains, and its worker stops cleanly on SIGTERM.
    drained = await until(
        lambda: deployment_status(client, DEPLOYMENT),
        lambda status: {b.build_id: b.status for b in status.builds}.get("v1") == "drained",
    )
    assert drained.current == "v2"
    shown = ratchet(server, "deploy", "status")
    assert shown.returncode == 0 and "current build v2" in shown.stdout, shown.stderr
    old.send_signal(signal.SIGTERM)
    assert old.wait_exit() == 0
    assert "worker stopped" in old.output

    # With no worker of v1 left, the moved session's v1 runs are read from their
    # histories: a fork at turn 1 and its events from the start (was: RPCError "no
    # poller seen for task queue recently").
    fresh = await AgentClient.connect(server.address, task_queue=QUEUE)
    end = await chat.event_offset()
    async with asyncio.timeout(30):
        checkpoint = await fresh.checkpoint(chat.id, at_turn=1)
        events = []
        async for event in fresh.get_session(chat.id).events(from_offset=0):
            events.append(event)
            if len(events) == end:
                break
    assert [m.text for m in checkpoint.messages] == ["hello", "answered by v1"]
    assert [e.kind for e in events].count("run_started") == 5
    fork = await fresh.fork(chat.id, at_turn=1)
    assert (await fork.send("still there?")).output == "answered by v2"

    # A build whose workflow changed without workflow.patched is refused if a run it
    # would take over (auto-upgrade) cannot replay; pinned runs stay where they are.
    for kind, workflow_id in ((Reminder, "reminder-2"), (Nightly, "nightly-1")):
        await client.temporal.start_workflow(
            kind.run, "call the bank", id=workflow_id, task_queue=QUEUE
        )
        await until(lambda id=workflow_id: build_of(client, id), lambda build: build == "v2")
    refused = promote(server, "v3", "--force", REMINDER_CHANGED="1")  # no v3 worker yet
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "nightly-1" in refused.stdout and "Nightly" in refused.stdout
    assert "reminder-2" not in refused.stdout  # pinned to v2: never replays on v3
    assert "not promoted" in refused.stderr
    assert (await deployment_status(client, DEPLOYMENT)).current == "v2"
