"""``ratchet chat`` and ``ratchet sessions``, run as a user runs them, against a worker
in the test's process (so the test can see what the tools really did)."""

from __future__ import annotations

import asyncio
import getpass
import json
import os
import signal
import sys

import pytest
from temporalio.client import WorkflowExecutionStatus

from ratchet.agents import Result, RunContext, ScriptedModel, Thread, ToolCallingAgent, tool
from ratchet.client import AgentClient, AgentStatus
from ratchet.client._listing import WorkflowSummary, _status, list_workflows, type_clause
from ratchet.devserver import DevServer
from ratchet.errors import RunError
from ratchet.types import Message
from ratchet.wire import RunOptions, SessionOptions
from ratchet.worker import build_worker
from tests.chaos import as_from_a_terminal, ended

from ..conftest import ROOT
from ..hitl_agents import HEARTBEAT_WITH_MARGIN, Blocker, Ledger, payment_agent
from ..workflows.test_fork import TwoStep


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


class Looper(TwoStep):
    """TwoStep, but a run for "loop" never answers: it fails at its max_turns."""

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        looping = bool(thread.messages) and thread.messages[-1].text == "looping"
        if looping or (messages and messages[-1].text == "loop"):
            await thread.on_new_messages([*messages, Message.assistant("looping")])
            return Result()
        return await super().run(messages, thread, context)


async def test_sessions_show_numbers_a_failed_or_later_runs_turns_as_fork_counts_them(
    temporal_server: DevServer, agent_client: AgentClient, task_queue: str
):
    async def table(session_id: str) -> tuple[str, list[str]]:
        """``sessions show``'s output, and the turn numbers of its table."""
        code, out, err = await ratchet(temporal_server, task_queue, "sessions", "show", session_id)
        assert code == 0, err
        lines = out.split("numbered in the session:\n")[1].splitlines()[2:]
        return out, [first for row in lines if (first := row.split()[0]).isdigit()]

    options = SessionOptions(run=RunOptions(max_turns=3))
    async with build_worker(agent_client, {"looper": Looper}):
        session = await agent_client.start_session("looper", options=options)
        await session.send("alpha")  # turns 1 and 2
        with pytest.raises(RunError):
            await session.send("loop")  # three turns, then it fails: rolled back
        out, rows = await table(session.id)
        assert "(FAILED), numbered in the session:" in out, out
        assert rows == ["3", "4", "5"], out  # before: 1, 2, 3 (the first run's numbers)
        # Row 3 is where fork --at-turn 3 forks: after the failed run's first turn.
        fork = await agent_client.fork(session.id, at_turn=3)
        assert [m.text for m in (await fork.thread()).messages][-2:] == ["loop", "looping"]
        await session.send("beta")  # the failed run's turns were not the session's
        out, rows = await table(session.id)
        assert rows == ["3", "4"], out
        fork = await agent_client.fork(session.id, at_turn=4)
        assert [m.text for m in (await fork.thread()).messages][-1] == "beta: turn 4"


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
        assert f"turns of run 2 of {two.id} (COMPLETED), numbered in the session:" in out
        # Numbered as `sessions fork --at-turn` counts them: run 2's turns are 3 and 4.
        table = out.split("numbered in the session:\n")[1].splitlines()[2:4]
        assert [row.split()[0] for row in table] == ["3", "4"], out
        # A run of the session, as events and `ratchet watch` name it, stands for it.
        code, by_run, err = await ratchet(
            temporal_server, task_queue, "sessions", "show", f"{two.id}-run-2"
        )
        assert code == 0 and by_run == out, err
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


async def test_sessions_list_and_stop(
    temporal_server: DevServer, agent_client: AgentClient, task_queue: str
):
    agent = Blocker()
    options = SessionOptions(run=RunOptions(heartbeat_timeout=HEARTBEAT_WITH_MARGIN))
    async with build_worker(agent_client, {"blocker": agent}):
        session = await agent_client.start_session("blocker", options=options)
        sent = asyncio.create_task(session.send("block"))
        await agent.blocked.wait()
        code, out, err = await ratchet(temporal_server, task_queue, "sessions", "stop", session.id)
        assert (code, out.strip()) == (
            0,
            f"session {session.id}: its run in progress stopped (finished turns are kept)",
        ), err
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


async def test_stopping_a_finished_run_of_a_session_leaves_its_run_in_progress_alone(
    temporal_server: DevServer, agent_client: AgentClient, task_queue: str
):
    agent = Blocker()
    options = SessionOptions(run=RunOptions(heartbeat_timeout=HEARTBEAT_WITH_MARGIN))
    async with build_worker(agent_client, {"blocker": agent}):
        session = await agent_client.start_session("blocker", options=options)
        assert (await session.send("first")).output == "finished first"
        sent = asyncio.create_task(session.send("block"))
        await agent.blocked.wait()
        first, second = f"{session.id}-run-1", f"{session.id}-run-2"
        # Before: the id stood for its session, so this stopped run 2 (CANCELLED, no answer).
        code, out, err = await ratchet(temporal_server, task_queue, "sessions", "stop", first)
        assert (code, out.strip()) == (
            0,
            f"run {first} of session {session.id} has ended; nothing to stop; "
            f"its run in progress is {second}",
        ), err
        code, _, err = await ratchet(
            temporal_server, task_queue, "sessions", "stop", f"{session.id}-run-7"
        )
        assert code == 1 and f"has no run {session.id}-run-7 (it has had 2)" in err
        assert not sent.done() and agent.cancelled == []
        code, out, err = await ratchet(temporal_server, task_queue, "sessions", "stop", second)
        assert (code, out.strip()) == (
            0,
            f"run {second} of session {session.id} stopped (finished turns are kept)",
        ), err
        assert (await sent).status == AgentStatus.CANCELLED


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
        assert out.strip() == f"approved {pending.action.id} in run {handle.id}"
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
            preexec_fn=as_from_a_terminal,
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
        rest, err = await ended(chat)
    assert chat.returncode == 0, err
    out = (before + rest).decode()
    assert "finder> Looking it up.\n  · look_up()\nfinder> Found it: 42.\n" in out
    assert out.count("Found it: 42.") == 1  # streamed, not printed again at the end
    assert b"Traceback" not in err and b"never retrieved" not in err


async def test_show_export_fork_and_stop_take_a_run_id(
    temporal_server: DevServer, agent_client: AgentClient, task_queue: str
):
    ledger = Ledger()
    agent = payment_agent(ledger, [ScriptedModel.call("pay", to="acme", amount=300)])
    async with build_worker(agent_client, {"pay": agent, "two": TwoStep}):
        two = await agent_client.start_run("two", "alpha")  # a run, not a session
        await two.result()
        pay = await agent_client.start_run("pay", "pay acme")
        (pending,) = await pay.wait_for_pending()

        # "Query handler 'status' not found" (show, export) or "Update handler 'cancel'
        # not found" (then the verb for stop) before: the verbs took only session ids.
        code, out, err = await ratchet(temporal_server, task_queue, "sessions", "show", pay.id)
        assert code == 0, err
        assert f"run: {pay.id}" in out and "agent: pay · AWAITING_APPROVAL" in out
        assert f"waiting for approval: {pending.action.id} · " in out
        assert 'pay(to="acme", amount=300)' in out
        assert "user: pay acme" in out

        code, out, err = await ratchet(temporal_server, task_queue, "sessions", "export", two.id)
        assert code == 0, err
        exported = json.loads(out)
        assert exported["run"] == two.id
        assert [m["role"] for m in exported["thread"]["messages"]] == ["user", *["assistant"] * 2]
        assert exported["state"]["agents"][0]["entries"]["count"]["data"] == 2

        code, out, err = await ratchet(
            temporal_server, task_queue, "sessions", "fork", two.id, "--at-turn", "1"
        )
        assert code == 0, err
        fork = agent_client.get_session(out.strip())
        assert len((await fork.thread()).messages) == 2

        code, out, err = await ratchet(temporal_server, task_queue, "sessions", "stop", pay.id)
        assert (code, out.strip()) == (0, f"run {pay.id} stopped (its finished turns are kept)"), (
            err
        )
        code, out, err = await ratchet(temporal_server, task_queue, "sessions", "stop", two.id)
        assert out.strip() == f"run {two.id} has ended (COMPLETED); nothing to stop", err
        assert (await pay.result()).status == AgentStatus.CANCELLED  # stopped, its turns kept
        code, out, err = await ratchet(temporal_server, task_queue, "sessions", "stop", pay.id)
        assert out.strip() == f"run {pay.id} has ended (CANCELLED); nothing to stop", err
        await fork.close()
    assert ledger.payments == []


async def test_sessions_list_is_newest_first_and_names_a_run_no_worker_took(
    temporal_server: DevServer, agent_client: AgentClient, task_queue: str
):
    agent = f"nobody-{task_queue}"  # no worker hosts it: its runs never start
    older = await agent_client.start_run(agent, "hi")
    newer = await agent_client.start_run(agent, "hi")
    await newer.workflow.terminate("ended while the older one waits")
    rows: list[list[str]] = []
    try:
        for _ in range(100):  # the visibility store is eventually consistent; poll it
            code, out, err = await ratchet(
                temporal_server, task_queue, "sessions", "list", "--agent", agent
            )
            assert code == 0, err
            rows = [line.split() for line in out.splitlines()[2:]]
            if [row[3] for row in rows] == ["TERMINATED", "PENDING"]:
                break
            await asyncio.sleep(0.1)
        code, out, err = await ratchet(
            temporal_server, task_queue, "sessions", "list", "--agent", agent, "--status", "pending"
        )
    finally:
        await older.workflow.terminate("test over")
    # The open one first, before; its agent "?" and its status RUNNING.
    assert [row[:4] for row in rows] == [
        [newer.id, "run", agent, "TERMINATED"],
        [older.id, "run", agent, "PENDING"],
    ]
    assert code == 0 and older.id in out, err


async def test_sessions_list_takes_every_agent_status(temporal_server: DevServer, task_queue: str):
    for status in AgentStatus:  # INTERRUPTED was refused: the CLI had a list of its own
        code, out, err = await ratchet(
            temporal_server, task_queue, "sessions", "list", "--status", status.value.lower()
        )
        assert code == 0, err


async def test_the_listing_is_newest_first_and_indexes_a_run_from_its_start(
    agent_client: AgentClient, task_queue: str
):
    agent = f"nobody-{task_queue}"
    older = await agent_client.start_run(agent, "hi")
    newer = await agent_client.start_run(agent, "hi")
    await newer.workflow.terminate("ended while the older one waits")
    query = f"{type_clause(runs=True)} AND AgentName = '{agent}'"
    rows: list[WorkflowSummary] = []
    try:
        for _ in range(100):  # the visibility store is eventually consistent; poll it
            rows = await list_workflows(agent_client.temporal, query)
            if [row.status for row in rows] == ["TERMINATED", "PENDING"]:
                break
            await asyncio.sleep(0.1)
    finally:
        await older.workflow.terminate("test over")
    # Not found before (a run names its agent only once a worker takes it), and the
    # server's own order put the open run first.
    assert [(row.id, row.agent) for row in rows] == [(newer.id, agent), (older.id, agent)]


async def spawn(server: DevServer, task_queue: str, *args: str) -> asyncio.subprocess.Process:
    """A ``ratchet`` command in a child process, its stdin, stdout and stderr piped."""
    return await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "ratchet.cli", *args, "--task-queue", task_queue),
        cwd=ROOT,
        env={**os.environ, "TEMPORAL_ADDRESS": server.address},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        preexec_fn=as_from_a_terminal,  # the tests press Ctrl-C
    )


async def read_until(stream: asyncio.StreamReader | None, text: str) -> str:
    """What ``stream`` says up to and with ``text`` (fails if it ends first)."""
    assert stream is not None
    seen = ""
    while text not in seen:
        chunk = await asyncio.wait_for(stream.read(100), 60)
        assert chunk, f"ended before {text!r}: {seen}"
        seen += chunk.decode()
    return seen


async def test_run_prints_what_waits_for_approval_and_the_command_that_approves_it(
    temporal_server: DevServer, agent_client: AgentClient, task_queue: str
):
    ledger = Ledger()
    agent = payment_agent(ledger, [ScriptedModel.call("pay", to="acme", amount=300)])
    async with build_worker(agent_client, {"pay": agent}):
        run = await spawn(temporal_server, task_queue, "run", "pay", "pay acme")
        said = await read_until(run.stdout, "--reason ...\n")  # silent before
        approve = next(line for line in said.splitlines() if "approve: " in line)
        command = approve.split("approve: ", 1)[1].split()
        code, _, err = await ratchet(temporal_server, task_queue, *command[1:])
        assert code == 0, err
        out, err = await asyncio.wait_for(run.communicate(), 60)
        workflow_id = said.split()[1]
        thread = await agent_client.get_run(workflow_id).thread()
    (call,) = [c for m in thread.messages for c in m.tool_calls]
    assert f'waiting for approval: pay(to="acme", amount=300) (call {call.id})' in said
    assert command == ["ratchet", "sessions", "approve", workflow_id, call.id]
    assert f"  reject:  ratchet sessions reject {workflow_id} {call.id} --reason ..." in said
    assert run.returncode == 0, err
    assert out.decode().rstrip().endswith("done: paid 300 to acme")
    assert ledger.payments == [("acme", 300, 1)]


async def test_ctrl_c_at_the_approval_prompt_leaves_the_session_going_without_a_traceback(
    temporal_server: DevServer, agent_client: AgentClient, task_queue: str
):
    agent = payment_agent(Ledger(), [ScriptedModel.call("pay", to="acme", amount=300)])
    async with build_worker(agent_client, {"pay": agent}):
        chat = await spawn(temporal_server, task_queue, "chat", "pay")
        assert chat.stdin is not None
        said = await read_until(chat.stdout, "session: ")
        chat.stdin.write(b"pay acme\n")
        said += await read_until(chat.stdout, "? [y/n] ")
        chat.send_signal(signal.SIGINT)
        _, err = await ended(chat)  # it hung before
        session = agent_client.get_session(said.split("session: ")[1].split()[0])
        (pending,) = await session.pending()  # the call still waits, for someone else
        await session.reject(pending.action.id, "test over")
        await session.close()
    text = err.decode()
    assert chat.returncode == 130
    assert "Traceback" not in text, text  # about 60 lines of it before
    assert f"interrupted: session {session.id} goes on without this command." in text
    assert f"continue it: ratchet chat pay --session {session.id}" in text


async def test_a_call_decided_elsewhere_withdraws_the_chat_prompt(
    temporal_server: DevServer, agent_client: AgentClient, task_queue: str
):
    ledger = Ledger()
    agent = payment_agent(ledger, [ScriptedModel.call("pay", to="acme", amount=300)])
    async with build_worker(agent_client, {"pay": agent}):
        chat = await spawn(temporal_server, task_queue, "chat", "pay")
        assert chat.stdin is not None
        said = await read_until(chat.stdout, "session: ")
        chat.stdin.write(b"pay acme\n")
        said += await read_until(chat.stdout, "? [y/n] ")
        session = agent_client.get_session(said.split("session: ")[1].split()[0])
        (pending,) = await session.pending()
        await session.approve(pending.action.id, by="bob")
        # The prompt waited for a key before; now the reply comes with no key pressed.
        said += await read_until(chat.stdout, "pay> done: paid 300 to acme")
        chat.stdin.write(b"y\n/quit\n")  # "y" is the next message now, not an answer
        out, err = await ended(chat)
        await session.close()
    assert chat.returncode == 0, err
    assert f"note: {pending.action.id} was approved by bob elsewhere" in said
    assert ledger.payments == [("acme", 300, 1)]
    assert "Traceback" not in err.decode()


async def test_a_decision_and_a_chat_message_say_when_no_worker_takes_them(
    temporal_server: DevServer, agent_client: AgentClient, task_queue: str
):
    agent = payment_agent(Ledger(), [ScriptedModel.call("pay", to="acme", amount=300)])
    async with build_worker(agent_client, {"pay": agent}):
        handle = await agent_client.start_run("pay", "pay acme")
        (pending,) = await handle.wait_for_pending()
        session = await agent_client.start_session("pay")
    # The worker has stopped: nothing takes the decision or the message now.
    approve = await spawn(
        temporal_server, task_queue, "sessions", "approve", handle.id, pending.action.id
    )
    chat = await spawn(temporal_server, task_queue, "chat", "pay", "--session", session.id)
    assert chat.stdin is not None
    chat.stdin.write(b"hello\n")
    try:  # both waited silently before (the decision for 13 minutes)
        decided = await read_until(approve.stderr, "\n")
        chatted = await read_until(chat.stderr, "\n")
    finally:
        for process in (approve, chat):
            if process.returncode is None:
                process.kill()
            await process.communicate()
        await handle.cancel()
        await session.workflow.terminate("test over")
    for said, what in ((decided, f"run {handle.id}"), (chatted, f"session {session.id}")):
        assert said.startswith(f"note: no worker has taken {what}'s task in 5 s"), said
        assert f"--task-queue {task_queue}" in said


def test_a_listed_run_that_was_stopped_or_failed_inside_a_completed_workflow_says_so():
    running, completed = WorkflowExecutionStatus.RUNNING, WorkflowExecutionStatus.COMPLETED
    taken = ["unversioned:0a1b2c"]  # BuildIds: a worker completed a workflow task
    assert _status(running, "AWAITING_APPROVAL", taken) == "AWAITING_APPROVAL"
    assert _status(None, None, taken) == "RUNNING"
    assert _status(running, "RUNNING", None) == "PENDING"  # no worker has taken it yet
    assert _status(completed, "CANCELLED", taken) == "CANCELLED"  # stopped: was COMPLETED
    assert _status(completed, "FAILED", taken) == "FAILED"
    assert _status(completed, "COMPLETED", taken) == "COMPLETED"
    assert _status(completed, None, taken) == "COMPLETED"
    assert _status(WorkflowExecutionStatus.TERMINATED, "RUNNING", None) == "TERMINATED"


async def test_chat_exits_1_when_a_message_fails_and_refuses_a_closed_session(
    temporal_server: DevServer, agent_client: AgentClient, task_queue: str
):
    echo = ToolCallingAgent(ScriptedModel(lambda messages, context: "ok"), [])
    async with build_worker(agent_client, {"echo": lambda: echo}):
        # An agent no worker hosts: the session starts, its message fails.
        unknown = await ratchet(temporal_server, task_queue, "chat", "nosuch", stdin="hi\n")
        session = await agent_client.start_session("echo")
        await session.send("hello")
        other = await ratchet(
            temporal_server, task_queue, "chat", "travel", "--session", session.id, stdin="again\n"
        )
        await session.close()
        closed = await ratchet(
            temporal_server, task_queue, "chat", "echo", "--session", session.id, stdin="more\n"
        )
        missing = await ratchet(temporal_server, task_queue, "chat", "echo", "--session", "nope-1")
        stop = await ratchet(temporal_server, task_queue, "sessions", "stop", session.id)
    code, out, err = unknown
    assert code == 1 and "not registered" in err, (out, err)
    code, out, err = other  # the session's own agent answers; the name given is noted
    assert code == 0, err
    assert f"note: session {session.id} runs agent 'echo'" in err and "echo> ok" in out
    code, out, err = closed
    assert code == 1 and "session:" not in out, out
    assert f"error: session {session.id} is closed" in err and "ratchet chat echo" in err
    code, out, err = missing  # no banner naming a session that is not there
    assert code == 1 and "session:" not in out and "nope-1" in err, (out, err)
    assert stop[:2] == (0, f"session {session.id} is closed; nothing to stop\n"), stop
    for _, _, err in (unknown, other, closed, missing):
        assert "Traceback" not in err


async def test_sessions_delete_stops_a_running_session_then_deletes_it_and_its_runs(
    temporal_server: DevServer, agent_client: AgentClient, task_queue: str
):
    agent = Blocker()
    options = SessionOptions(
        continue_as_new_after_runs=1, run=RunOptions(heartbeat_timeout=HEARTBEAT_WITH_MARGIN)
    )
    temporal = agent_client.temporal
    async with build_worker(agent_client, {"blocker": agent, "two": TwoStep}):
        session = await agent_client.start_session("blocker", options=options)
        await session.send("first")
        sent = asyncio.create_task(session.send("block"))
        await agent.blocked.wait()
        code, out, err = await ratchet(
            temporal_server, task_queue, "sessions", "delete", session.id
        )
        assert code == 0, err
        head, runs = out.splitlines()[:2]
        assert head == f"session {session.id} deleted (it was open: stopped, then terminated):"
        # Two runs, and a third when the stopped run's end continued it as new in time.
        assert runs in ("  2 workflow run(s) of the session", "  3 workflow run(s) of the session")
        assert (await sent).status == AgentStatus.CANCELLED  # stopped before it was deleted
        query = f"WorkflowId = '{session.id}'"
        assert [w async for w in temporal.list_workflows(query)] == []
        code, out, err = await ratchet(
            temporal_server, task_queue, "sessions", "delete", session.id
        )
        assert (code, out.strip()) == (
            0,
            f"session {session.id}: nothing to delete (no such session, or deleted already)",
        ), err

        source = await agent_client.start_session("two")
        await source.send("alpha")
        fork = await agent_client.fork(source.id, at_turn=1, session_id=f"{source.id}-kept")
        code, out, err = await ratchet(temporal_server, task_queue, "sessions", "delete", source.id)
        assert code == 1 and f"fork(s) read their earlier messages from it: {fork.id}" in err
        code, out, err = await ratchet(
            temporal_server, task_queue, "sessions", "delete", source.id, "--force"
        )
        assert code == 0, err
        assert f"forks that lost their earlier messages: {fork.id}" in out


async def test_sessions_show_says_why_a_failed_run_failed(
    temporal_server: DevServer, agent_client: AgentClient, task_queue: str
):
    def broken(messages, context):
        raise ValueError("the model's reply could not be parsed")

    agent = ToolCallingAgent(ScriptedModel(broken))
    async with build_worker(agent_client, {"broken": agent}):
        run = await agent_client.start_run("broken", "hi", options=RunOptions(max_attempts=1))
        with pytest.raises(RunError):
            await run.result()
        code, out, err = await ratchet(temporal_server, task_queue, "sessions", "show", run.id)
    assert code == 0, err
    assert "agent: broken · FAILED" in out
    assert "failed: " in out and "the model's reply could not be parsed" in out, out
