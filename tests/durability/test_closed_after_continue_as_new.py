"""A session closed in the first workflow task of a run it continued into, on a
worker that never ran that run (restarted, redeployed, evicted from its cache).

0.1.0's ``close`` left indexing the close to the main loop, so whether the upsert
or the Update's completion went first depended on the activation's job order, and
a worker catching up from history ordered them unlike a replay: the history did not
replay, and queries to the closed session failed. The close now indexes itself
(patched); a session closed so by 0.1.0 is read from its history.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tarfile
from io import BytesIO
from pathlib import Path

import pytest

from ratchet.client import AgentClient
from ratchet.deploy import replay
from ratchet.devserver import DevServer
from ratchet.wire import SessionOptions
from ratchet.worker import build_worker

from ..conftest import ROOT
from ..workflows.test_sessions import Echo

RELEASE_0_1_0 = "07f6b334ab640a74ef8b4207a48016c991179614"


async def close_on_a_fresh_worker(client: AgentClient) -> str:
    """Two sends continue the session as new; that worker stops; another, which never
    ran the new run, closes it. The session's id."""
    options = SessionOptions(continue_as_new_after_runs=2)
    async with build_worker(client, {"echo": Echo}):
        session = await client.start_session("echo", options=options)
        await session.send("one")
        await session.send("two")
        await session.status()  # the continued run has had its first workflow task
    async with build_worker(client, {"echo": Echo}):
        await session.close()
    return session.id


async def test_a_session_closed_after_continue_as_new_on_a_fresh_worker_replays(
    agent_client: AgentClient,
):
    session_id = await close_on_a_fresh_worker(agent_client)

    history = await agent_client.temporal.get_workflow_handle(session_id).fetch_history()
    report = await replay([history])
    assert report.replayed == 1 and report.ok, report.lines()
    # Read with a fresh client and no worker running: from history, not by a replay.
    fresh = AgentClient(agent_client.temporal, task_queue=agent_client.task_queue)
    session = fresh.get_session(session_id)
    status = await session.status()
    assert (status.status, status.runs, status.turns) == ("CLOSED", 2, 2)
    thread = await session.thread()
    assert [m.text for m in thread.messages if m.role == "user"] == ["one", "two"]
    events = [e async for e in session.events()]
    assert [e.kind for e in events].count("run_finished") == 2


CLOSE_WITH_0_1_0 = """
import asyncio, sys
from ratchet.process import hard_exit
from ratchet.agents import Agent, Message, Result
from ratchet.client import AgentClient
from ratchet.wire import SessionOptions
from ratchet.worker import build_worker

class Echo(Agent):
    async def run(self, messages, thread, context):
        await thread.on_new_messages(messages)
        return Result(final_response=Message.assistant("echo " + messages[-1].text))

async def main():
    client = await AgentClient.connect(sys.argv[1], task_queue=sys.argv[2])
    options = SessionOptions(continue_as_new_after_runs=2)
    async with build_worker(client, {"echo": Echo}):
        session = await client.start_session("echo", options=options)
        await session.send("one")
        await session.send("two")
        await session.status()
    async with build_worker(client, {"echo": Echo}):
        await session.close()
    print(session.id)

asyncio.run(main())
hard_exit(0)
"""


def release_0_1_0(into: Path) -> Path:
    """Ratchet 0.1.0's package, from this repository's history."""
    try:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", RELEASE_0_1_0, "ratchet"],
            check=True,
            capture_output=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.fail(f"This test needs the repository's history (git, commit 0.1.0): {e}")
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


async def run_with_0_1_0(tmp_path: Path, script: str, *args: str) -> str:
    """What ``script`` printed, run by Ratchet 0.1.0's code with ``args``."""
    old = release_0_1_0(tmp_path / "release-0.1.0")
    path = tmp_path / "with_0_1_0.py"
    path.write_text(script)
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, str(path), *args],
        env={**os.environ, "PYTHONPATH": str(old)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow  # a child process running 0.1.0
async def test_a_session_0_1_0_closed_in_that_shape_is_read_by_this_code(
    temporal_server: DevServer, agent_client: AgentClient, tmp_path: Path
):
    printed = await run_with_0_1_0(
        tmp_path, CLOSE_WITH_0_1_0, temporal_server.address, agent_client.task_queue
    )
    session_id = printed.split()[-1]
    history = await agent_client.temporal.get_workflow_handle(session_id).fetch_history()
    assert not (await replay([history])).ok  # the shape 0.1.0 wrote: it does not replay

    # This code reads it from its history, with no worker and with one.
    session = agent_client.get_session(session_id)
    status = await session.status()
    assert (status.status, status.runs, status.turns) == ("CLOSED", 2, 2)
    thread = await session.thread()
    assert [m.text for m in thread.messages] == ["one", "echo one", "two", "echo two"]
    # Its events: read from history too (its last run cannot be replayed to answer).
    events = [e async for e in session.events()]
    assert [e.kind for e in events].count("run_finished") == 2
    async with build_worker(agent_client, {"echo": Echo}):
        assert (await session.status()).status == "CLOSED"
        assert [e async for e in session.events()] == events
