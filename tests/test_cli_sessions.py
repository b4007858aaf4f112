"""``ratchet chat`` and ``ratchet sessions``, run as a user runs them, against a worker
in the test's process (so the test can see what the tools really did)."""

from __future__ import annotations

import asyncio
import getpass
import json
import os
import sys
from datetime import timedelta

from ratchet.agents import ScriptedModel, ToolCallingAgent, tool
from ratchet.client import AgentClient, AgentStatus
from ratchet.devserver import DevServer
from ratchet.wire.options import RunOptions, SessionOptions
from ratchet.worker import build_worker

from .conftest import ROOT
from .hitl_agents import Blocker, Ledger, payment_agent
from .test_fork import TwoStep


async def ratchet(
    server: DevServer, task_queue: str, *args: str, stdin: str = ""
) -> tuple[int, str, str]:
    env = {**os.environ, "TEMPORAL_ADDRESS": server.address}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ratchet.cli",
        *args,
        "--task-queue",
        task_queue,
        cwd=ROOT,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin.encode()), 120)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_chat_asks_at_the_terminal_before_a_payment_runs(
    temporal_server: DevServer, agent_client: AgentClient, task_queue: str
):
    ledger = Ledger()
    replies = [
        ScriptedModel.call("pay", to="acme", amount=500),
        "done: paid",
        ScriptedModel.call("pay", to="mallory", amount=900),
    ]
    agent = payment_agent(ledger, replies)
    async with build_worker(agent_client, {"pay": agent}):
        code, out, err = await ratchet(
            temporal_server,
            task_queue,
            "chat",
            "pay",
            "--close",
            stdin="pay acme\ny\npay mallory\nn\n/quit\n",
        )
    assert code == 0, err
    assert 'approve pay(to="acme", amount=500)? [y/n]' in out
    assert "pay> done: paid" in out
    assert "declined at the terminal" in out
    assert ledger.payments == [("acme", 500, 1)]
    assert "closed" in out


async def test_sessions_show_export_fork_and_decide(
    temporal_server: DevServer, agent_client: AgentClient, task_queue: str
):
    ledger = Ledger()
    agent = payment_agent(ledger, [ScriptedModel.call("pay", to="acme", amount=300)])
    async with build_worker(agent_client, {"pay": agent, "two": TwoStep}):
        two = await agent_client.start_session("two")
        await two.send("alpha")
        await two.send("beta")
        code, out, err = await ratchet(temporal_server, task_queue, "sessions", "show", two.id)
        assert code == 0, err
        assert "agent: two · PENDING · 2 runs" in out and "assistant: beta: turn 4" in out
        code, out, err = await ratchet(
            temporal_server, task_queue, "sessions", "show", two.id, "--messages", "2"
        )
        assert out.splitlines()[-3:] == [
            "… 4 earlier messages",
            "assistant: thinking about beta",
            "assistant: beta: turn 4",
        ]

        code, out, err = await ratchet(temporal_server, task_queue, "sessions", "export", two.id)
        exported = json.loads(out)
        assert len(exported["thread"]["messages"]) == 6
        assert exported["state"]["agents"][0]["entries"]["count"]["data"] == 4

        code, out, err = await ratchet(
            temporal_server, task_queue, "sessions", "fork", two.id, "--at-turn", "2"
        )
        assert code == 0, err
        fork = agent_client.get_session(out.strip())
        assert len((await fork.thread()).messages) == 3

        pay = await agent_client.start_session("pay")
        sent = asyncio.create_task(pay.send("pay acme"))
        (pending,) = await pay.wait_for_pending()
        code, out, err = await ratchet(temporal_server, task_queue, "sessions", "show", pay.id)
        assert f"waiting for approval: {pending.action.id}" in out
        code, out, err = await ratchet(
            temporal_server, task_queue, "sessions", "approve", pay.id, "call_nope"
        )
        assert code == 1 and "no pending call or question 'call_nope'" in err
        code, out, err = await ratchet(
            temporal_server,
            task_queue,
            "sessions",
            "approve",
            pay.id,
            pending.action.id,
            "--always",
        )
        assert code == 0, err
        result = await sent
        assert (await pay.approval_rules()).allow == ["pay"]
    assert ledger.payments == [("acme", 300, 1)]
    assert result.output == "done: paid 300 to acme"


async def test_sessions_list_and_cancel(
    temporal_server: DevServer, agent_client: AgentClient, task_queue: str
):
    agent = Blocker()
    options = SessionOptions(run=RunOptions(heartbeat_timeout=timedelta(seconds=1)))
    async with build_worker(agent_client, {"blocker": agent}):
        session = await agent_client.start_session("blocker", options=options)
        sent = asyncio.create_task(session.send("block"))
        await agent.blocked.wait()
        code, out, err = await ratchet(
            temporal_server, task_queue, "sessions", "cancel", session.id
        )
        assert (code, out.strip()) == (0, "ok"), err
        assert (await sent).status == AgentStatus.CANCELLED
        listed = ""
        row: list[str] = []
        for _ in range(100):  # the visibility store is eventually consistent; poll it
            code, listed, err = await ratchet(temporal_server, task_queue, "sessions", "list")
            row = next((r.split() for r in listed.splitlines() if r.startswith(session.id)), [])
            if row[3:4] == ["PENDING"] or code != 0:
                break
            await asyncio.sleep(0.1)
    # The session is open and idle (its run was cancelled), and says so by its search attributes.
    assert row[:4] == [session.id, "session", "blocker", "PENDING"], (listed, err)


async def test_approve_takes_a_run_id_and_records_who_decided(
    temporal_server: DevServer, agent_client: AgentClient, task_queue: str
):
    ledger = Ledger()
    agent = payment_agent(ledger, [ScriptedModel.call("pay", to="acme", amount=300)])
    async with build_worker(agent_client, {"pay": agent}):
        handle = await agent_client.start_run("pay", "pay acme")  # a run, not a session
        (pending,) = await handle.wait_for_pending()
        code, out, err = await ratchet(
            temporal_server, task_queue, "sessions", "approve", handle.id, pending.action.id
        )
        assert code == 0, err  # a query error on the run id before
        result = await handle.result()
        decisions = await handle.decisions()
    assert ledger.payments == [("acme", 300, 1)]
    assert result.output == "done: paid 300 to acme"
    assert [(d.id, d.approved, d.by) for d in decisions] == [
        (pending.action.id, True, getpass.getuser())  # "cli" before, whoever ran it
    ]


async def test_chat_prints_the_reply_as_the_model_writes_it(
    temporal_server: DevServer, agent_client: AgentClient, task_queue: str
):
    go = asyncio.Event()

    @tool
    async def look_up() -> str:
        """Look it up."""
        await go.wait()
        return "42"

    first = ScriptedModel.call("look_up").model_copy(update={"content": "Looking it up."})
    model = ScriptedModel([first, "Found it: 42."], stream=True)
    agent = ToolCallingAgent(model, [look_up])
    async with build_worker(agent_client, {"finder": lambda: agent}):
        chat = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "ratchet.cli",
            "chat",
            "finder",
            "--task-queue",
            task_queue,
            cwd=ROOT,
            env={**os.environ, "TEMPORAL_ADDRESS": temporal_server.address},
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert chat.stdin is not None and chat.stdout is not None
        chat.stdin.write(b"what is it?\n")
        await chat.stdin.drain()
        before = b""
        while b"Looking it up." not in before:  # the reply so far, while the tool works
            chunk = await asyncio.wait_for(chat.stdout.read(100), 60)
            assert chunk, before
            before += chunk
        assert not go.is_set()
        go.set()
        chat.stdin.write(b"/quit\n")
        chat.stdin.close()
        rest, err = await asyncio.wait_for(chat.communicate(), 60)
    assert chat.returncode == 0, err
    out = (before + rest).decode()
    assert "finder> Looking it up.\n  · look_up()\nfinder> Found it: 42.\n" in out
    assert out.count("Found it: 42.") == 1  # streamed, not printed again at the end
    assert b"Traceback" not in err and b"never retrieved" not in err
