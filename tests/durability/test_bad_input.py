"""Bad input, case by case: each gets a Ratchet error of the documented type whose
message names what to change, and leaves no workflow running or wedged."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Sequence
from datetime import timedelta

import pytest
from temporalio.client import WorkflowExecutionStatus
from temporalio.converter import DataConverter
from temporalio.service import RPCError, RPCStatusCode

from ratchet.agents import RunContext, ScriptedModel, ToolCallingAgent, tool
from ratchet.client import AgentClient
from ratchet.errors import (
    AgentBuildError,
    AgentNotFoundError,
    AlreadyStartedError,
    BudgetExceededError,
    ConfigurationError,
    DecisionError,
    InvalidInputError,
    InvalidOptionsError,
    MaxTurnsExceededError,
    ModelError,
    NotFoundError,
    PayloadTooLargeError,
    RunFailedError,
    RunNotFoundError,
    SessionClosedError,
    SessionNotFoundError,
    StateError,
    run_failed,
)
from ratchet.evals._rerun import rerun
from ratchet.payloads import data_converter
from ratchet.types import Message
from ratchet.wire import RunInput, RunOptions, SessionOptions
from ratchet.worker import build_worker
from ratchet.workflows import AgentRunWorkflow

from ..conftest import ROOT
from ..hitl_agents import Ledger, payment_agent

RETRY_FAST = {"initial_retry_interval": timedelta(milliseconds=50)}
BIG = "x" * (2_500_000)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def explode() -> str:
    """Always fails."""
    raise RuntimeError("the disk is full")


@tool
def huge() -> str:
    """Returns more than a payload may hold."""
    return "y" * 3_000_000


def reads_tool_errors(first: Message) -> ToolCallingAgent:
    """Makes ``first`` its call, then answers with what the tool said."""

    def script(messages: Sequence[Message], context: RunContext) -> Message | str:
        said = [m.text for m in messages if m.role == "tool"]
        return "tool said: " + said[-1] if said else first

    return ToolCallingAgent(ScriptedModel(script), [add, explode, huge])


def agents(**extra) -> dict:
    return {"echo": ToolCallingAgent(ScriptedModel(lambda m, c: "ok"), [add]), **extra}


async def assert_closed(client: AgentClient, *workflow_ids: str) -> None:
    """Every workflow has ended: nothing was left running or retrying a task."""
    for workflow_id in workflow_ids:
        description = await client.temporal.get_workflow_handle(workflow_id).describe()
        assert description.status != WorkflowExecutionStatus.RUNNING, workflow_id


async def assert_never_started(client: AgentClient, workflow_id: str) -> None:
    with pytest.raises(RPCError) as e:
        await client.temporal.get_workflow_handle(workflow_id).describe()
    assert e.value.status == RPCStatusCode.NOT_FOUND


def new_id(prefix: str = "bad") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# --- options -------------------------------------------------------------------------

BAD_RUN_OPTIONS = [
    ({"max_turns": 0}, "max_turns=0", "at least 1"),
    ({"turn_timeout": timedelta(0)}, "turn_timeout=", "greater than 0"),
    ({"turn_timeout": timedelta(seconds=-5)}, "turn_timeout=", "greater than 0"),
    ({"heartbeat_timeout": timedelta(0)}, "heartbeat_timeout=", "greater than 0"),
    (
        {"heartbeat_timeout": timedelta(minutes=10), "turn_timeout": timedelta(minutes=5)},
        "heartbeat_timeout=",
        "shorter than turn_timeout",
    ),
    ({"max_attempts": -1}, "max_attempts=-1", "0 means unlimited"),
    ({"initial_retry_interval": timedelta(0)}, "initial_retry_interval=", "greater than 0"),
    ({"approval_timeout": timedelta(0)}, "approval_timeout=", "greater than 0"),
    ({"token_budget": 0}, "token_budget=0", "None: no budget"),
    ({"continue_as_new_after_turns": 0}, "continue_as_new_after_turns=0", "at least 1"),
]


@pytest.mark.parametrize(("fields", "names", "fix"), BAD_RUN_OPTIONS)
def test_run_options_out_of_range_fail_where_they_are_written(fields, names, fix):
    with pytest.raises(InvalidOptionsError) as e:
        RunOptions(**fields)
    assert f"RunOptions.{names}" in str(e.value) and fix in str(e.value)
    assert isinstance(e.value, ValueError)  # what pydantic users catch


@pytest.mark.parametrize(
    ("fields", "fix"),
    [
        ({"continue_as_new_after_runs": 0}, "SessionOptions.continue_as_new_after_runs=0"),
        ({"token_budget": -3}, "SessionOptions.token_budget=-3"),
    ],
)
def test_session_options_out_of_range_fail_where_they_are_written(fields, fix):
    with pytest.raises(InvalidOptionsError, match="must be at least 1") as e:
        SessionOptions(**fields)
    assert fix in str(e.value)


@pytest.mark.parametrize("address", ["nonsense", "http://x:1:2", "localhost:99999", "host:"])
async def test_a_malformed_address_is_refused_before_connecting(address: str):
    with pytest.raises(ConfigurationError, match="is not a Temporal address: give HOST:PORT"):
        await AgentClient.connect(address)


def test_every_bad_field_is_named_at_once():
    with pytest.raises(InvalidOptionsError) as e:
        RunOptions(max_turns=0, max_attempts=-2, token_budget=0)
    assert "3 value(s) out of range" in str(e.value)


def test_options_of_the_wrong_type_name_the_field():
    with pytest.raises(ValueError, match="max_turns"):
        RunOptions(max_turns="many")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "fields", "named"),
    [
        (RunOptions, {"max_turn": 3}, "no option max_turn (did you mean max_turns?)"),
        (
            RunOptions,
            {"continue_as_new_after": 3},
            "no option continue_as_new_after (did you mean continue_as_new_after_turns?)",
        ),
        (RunOptions, {"thread_mode": "inline"}, "no option thread_mode (removed: "),
        (SessionOptions, {"run": {"max_turn": 3}}, "no option run.max_turn (did you mean max_"),
        (
            SessionOptions,
            {"approval_timeout": timedelta(hours=1)},
            "it is an option of run: run=RunOptions(approval_timeout=...)",
        ),
    ],
)
def test_an_unknown_option_is_refused_where_it_is_written_naming_the_closest(
    options: type[RunOptions | SessionOptions], fields: dict[str, object], named: str
):
    with pytest.raises(InvalidOptionsError) as e:
        options(**fields)  # type: ignore[arg-type]
    assert f"{options.__name__} has no option" in str(e.value) and named in str(e.value)
    assert isinstance(e.value, ValueError)


def test_options_recorded_with_a_removed_option_still_decode():
    """A history's payload may carry options since removed: only code is refused."""
    converter = DataConverter.default.payload_converter
    stored = converter.to_payloads([{"thread_mode": "inline", "max_turns": 3}])[0]
    [decoded] = data_converter.payload_converter.from_payloads([stored], [RunOptions])
    assert decoded == RunOptions(max_turns=3)


async def test_options_that_skipped_the_check_are_refused_before_a_run_starts(
    agent_client: AgentClient,
):
    options = RunOptions.model_construct(max_attempts=-1)  # built without validation
    workflow_id = new_id()
    with pytest.raises(InvalidOptionsError, match="max_attempts=-1"):
        await agent_client.start_run("echo", "hi", options=options, workflow_id=workflow_id)
    await assert_never_started(agent_client, workflow_id)


async def test_options_that_reach_a_workflow_unchecked_fail_the_run_instead_of_wedging_it(
    agent_client: AgentClient,
):
    # Another client (an older Ratchet, a hand-written start) can send any value.
    options = RunOptions.model_construct(turn_timeout=timedelta(0))
    async with build_worker(agent_client, agents()):
        handle = await agent_client.temporal.start_workflow(
            AgentRunWorkflow.run,
            RunInput(agent="echo", messages=[Message.user("hi")], options=options),
            id=new_id(),
            task_queue=agent_client.task_queue,
        )
        run = agent_client.get_run(handle.id)
        with pytest.raises(InvalidOptionsError, match="turn_timeout=") as e:
            await run.result()
    assert isinstance(e.value, RunFailedError)
    await assert_closed(agent_client, handle.id)


async def test_session_options_that_skipped_the_check_are_refused(agent_client: AgentClient):
    options = SessionOptions.model_construct(run=RunOptions.model_construct(max_turns=0))
    session_id = new_id("session")
    with pytest.raises(InvalidOptionsError, match=r"SessionOptions.run.max_turns=0"):
        await agent_client.start_session("echo", session_id=session_id, options=options)
    await assert_never_started(agent_client, session_id)


# --- prompts -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prompt", "fix"),
    [
        (123, "must be a string or a list of"),
        (None, "must be a string or a list of"),
        (["hello"], "must be a string or a list of"),
        ({"role": "user"}, "must be a string or a list of"),
        ("", "prompt is empty"),
        ("  \n ", "prompt is empty"),
        ([], "prompt is empty"),
    ],
)
async def test_a_prompt_ratchet_cannot_run_is_refused_before_a_run_starts(
    agent_client: AgentClient, prompt, fix
):
    workflow_id = new_id()
    with pytest.raises(InvalidInputError, match=fix):
        await agent_client.start_run("echo", prompt, workflow_id=workflow_id)
    await assert_never_started(agent_client, workflow_id)


async def test_a_prompt_over_the_payload_limit_names_the_limit_and_payload_storage(
    agent_client: AgentClient,
):
    workflow_id = new_id()
    with pytest.raises(PayloadTooLargeError) as e:
        await agent_client.start_run("echo", BIG, workflow_id=workflow_id)
    assert "2 MB" in str(e.value) and "payload_storage" in str(e.value)
    await assert_never_started(agent_client, workflow_id)


async def test_a_session_message_of_the_wrong_type_or_size_is_refused_and_the_session_goes_on(
    agent_client: AgentClient,
):
    async with build_worker(agent_client, agents()):
        session = await agent_client.start_session("echo")
        with pytest.raises(InvalidInputError, match="must be a string or a list of"):
            await session.send(42)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="prompt is empty"):
            await session.send("")
        with pytest.raises(PayloadTooLargeError, match="payload_storage"):
            await session.send(BIG)
        assert (await session.send("still there?")).output == "ok"
        await session.close()
    await assert_closed(agent_client, session.id)


# --- agents and models ---------------------------------------------------------------


async def test_an_unknown_agent_fails_the_run_at_once_naming_the_registered_ones(
    agent_client: AgentClient,
):
    async with build_worker(agent_client, agents()):
        handle = await agent_client.start_run("ecco", "hi")
        with pytest.raises(AgentNotFoundError) as e:
            await handle.result()
    assert "registered: echo" in str(e.value)
    assert isinstance(e.value, RunFailedError)
    await assert_closed(agent_client, handle.id)


async def test_a_session_with_an_unknown_agent_fails_its_message_and_can_be_closed(
    agent_client: AgentClient,
):
    async with build_worker(agent_client, agents()):
        session = await agent_client.start_session("ecco")
        with pytest.raises(AgentNotFoundError, match="registered: echo"):
            await session.send("hi")
        await session.close()
    await assert_closed(agent_client, session.id)


def needs_a_model(model: str) -> ToolCallingAgent:
    return ToolCallingAgent(ScriptedModel([model]), [])


@pytest.mark.parametrize(
    "entry, says",
    [
        (1, "Agent 'a' is 1, a int: give an Agent, or a function (or class) that builds one"),
        (
            needs_a_model,
            "Agent 'a': its factory needs_a_model needs arguments (model), but a factory",
        ),
    ],
)
async def test_an_agent_entry_that_can_never_build_an_agent_is_refused_when_the_worker_starts(
    agent_client: AgentClient, entry: object, says: str
):
    with pytest.raises(ConfigurationError) as e:
        build_worker(agent_client, {"a": entry})  # type: ignore[dict-item]
    assert says in str(e.value)


def raises() -> ToolCallingAgent:
    raise KeyError("OPENAI_API_KEY")


@pytest.mark.parametrize(
    "factory, says",
    [
        (lambda: 1, "Agent 'broken': its factory returned 1, a int, not an Agent: return one"),
        (raises, "Agent 'broken' cannot be built: its factory raised KeyError: 'OPENAI_API_KEY'"),
    ],
)
async def test_an_agent_that_cannot_be_built_fails_its_runs_at_once(
    agent_client: AgentClient, factory: object, says: str
):
    # Retried for ever before (TypeError: 'int' object is not callable, on every attempt).
    options = RunOptions(max_attempts=3, **RETRY_FAST)
    async with build_worker(agent_client, agents(broken=factory)):
        handle = await agent_client.start_run("broken", "hi", options=options)
        with pytest.raises(AgentBuildError) as e:
            await handle.result()
        (turn,) = await handle.turns()
        session = await agent_client.start_session("broken", options=SessionOptions(run=options))
        with pytest.raises(AgentBuildError) as in_session:
            await session.send("hi")
        await session.close()
    assert says in str(e.value) and says in str(in_session.value)
    assert len(turn.attempts) == 1  # not retried
    await assert_closed(agent_client, handle.id, session.id)


async def test_a_model_that_refuses_the_key_fails_the_run_without_retrying(
    agent_client: AgentClient,
):
    error = ModelError("The model service answered 401: check OPENAI_API_KEY", retryable=False)

    def refuses(messages, context):
        raise error

    agent = ToolCallingAgent(ScriptedModel(refuses), [])
    async with build_worker(agent_client, agents(refuses=agent)):
        handle = await agent_client.start_run("refuses", "hi", options=RunOptions(**RETRY_FAST))
        with pytest.raises(ModelError, match="check OPENAI_API_KEY"):
            await handle.result()
    assert [t.attempts[-1].attempt for t in await handle.turns()] == [1]
    await assert_closed(agent_client, handle.id)


async def test_an_empty_model_reply_is_retried_then_fails_the_run(agent_client: AgentClient):
    agent = ToolCallingAgent(ScriptedModel(lambda m, c: Message.assistant("")), [])
    options = RunOptions(max_attempts=2, **RETRY_FAST)
    async with build_worker(agent_client, agents(mute=agent)):
        handle = await agent_client.start_run("mute", "hi", options=options)
        with pytest.raises(ModelError, match="neither text nor tool calls") as e:
            await handle.result()
    assert isinstance(e.value, RunFailedError)
    assert [t.attempts[-1].attempt for t in await handle.turns()] == [2]
    await assert_closed(agent_client, handle.id)


@pytest.mark.parametrize(
    ("options", "error", "fix"),
    [
        (RunOptions(max_turns=2), MaxTurnsExceededError, "Raise max_turns"),
        (RunOptions(token_budget=1), BudgetExceededError, "Raise token_budget"),
    ],
)
async def test_a_run_that_never_answers_stops_at_its_limit_naming_it(
    agent_client: AgentClient, options: RunOptions, error: type[Exception], fix: str
):
    forever = ScriptedModel(lambda m, c: ScriptedModel.call("add", a=1, b=1))
    async with build_worker(agent_client, agents(forever=ToolCallingAgent(forever, [add]))):
        handle = await agent_client.start_run("forever", "go", options=options)
        with pytest.raises(error, match=fix) as e:
            await handle.result()
    assert isinstance(e.value, RunFailedError)
    await assert_closed(agent_client, handle.id)


# --- tools ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "said"),
    [
        (ScriptedModel.raw_call("add", "{not json"), "not valid JSON"),
        (ScriptedModel.call("add", a="one", b=2), "invalid arguments for add: a:"),
        (ScriptedModel.call("add", a=1), "invalid arguments for add: b: Field required"),
        (ScriptedModel.call("teleport", to="mars"), "no tool named 'teleport'"),
        (ScriptedModel.call("explode"), "explode failed: RuntimeError: the disk is full"),
    ],
)
async def test_a_bad_tool_call_is_an_error_the_model_reads_and_the_run_goes_on(
    agent_client: AgentClient, call: Message, said: str
):
    async with build_worker(agent_client, agents(tools=reads_tool_errors(call))):
        handle = await agent_client.start_run("tools", "go")
        result = await handle.result()
    assert result.output.startswith("tool said: Error") and said in result.output
    await assert_closed(agent_client, handle.id)


async def test_a_tool_result_over_the_payload_limit_fails_the_turn_naming_the_tool(
    agent_client: AgentClient,
):
    agent = reads_tool_errors(ScriptedModel.call("huge"))
    async with build_worker(agent_client, agents(tools=agent)):
        handle = await agent_client.start_run("tools", "go", options=RunOptions(**RETRY_FAST))
        with pytest.raises(RunFailedError) as e:
            await handle.result()
    assert "huge" in str(e.value) and "Return less from the tool" in str(e.value)
    await assert_closed(agent_client, handle.id)


# --- state ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "fix"),
    [
        ("{not json", "must be JSON"),
        ({"agents": []}, "format 'ratchet.state' (made by RunHandle.export_state())"),
        ({"format": "ratchet.state", "format_version": 99}, "Upgrade Ratchet"),
        (
            {"format": "ratchet.state", "agents": [{"agent": "a"}, {"agent": "b"}]},
            "it has: a, b",
        ),
    ],
)
async def test_a_state_export_ratchet_cannot_use_is_refused_before_a_run_starts(
    agent_client: AgentClient, state, fix
):
    workflow_id = new_id()
    with pytest.raises((StateError, InvalidInputError)) as e:
        await agent_client.start_run("echo", "hi", state=state, workflow_id=workflow_id)
    assert fix in str(e.value)
    await assert_never_started(agent_client, workflow_id)


# --- decisions -----------------------------------------------------------------------


async def test_decisions_that_match_nothing_the_run_waits_for_are_refused(
    agent_client: AgentClient,
):
    ledger = Ledger()
    agent = payment_agent(ledger, [ScriptedModel.call("pay", to="acme", amount=500)])
    async with build_worker(agent_client, {"pay": agent}):
        handle = await agent_client.start_run("pay", "pay acme")
        (pending,) = await handle.wait_for_pending()
        call_id = pending.action.id
        with pytest.raises(DecisionError, match="call_nope") as unknown:
            await handle.approve("call_nope")
        with pytest.raises(DecisionError) as not_a_question:
            await handle.provide_input(call_id, "yes")
        await handle.approve(call_id, by="alice")
        with pytest.raises(DecisionError) as twice:
            await handle.reject(call_id, "changed my mind")
        await handle.result()
        with pytest.raises(DecisionError) as after:
            await handle.approve(call_id)
    assert call_id in str(unknown.value) or "waiting" in str(unknown.value)
    assert "approve" in str(not_a_question.value) or "question" in str(not_a_question.value)
    assert call_id in str(twice.value)
    assert handle.id in str(after.value) or "ended" in str(after.value)
    assert ledger.payments == [("acme", 500, 1)]  # the one decision that counted
    await assert_closed(agent_client, handle.id)


# --- sessions and ids ----------------------------------------------------------------


async def test_a_closed_session_refuses_messages(agent_client: AgentClient):
    async with build_worker(agent_client, agents()):
        session = await agent_client.start_session("echo")
        await session.send("hi")
        await session.close()
        with pytest.raises(SessionClosedError, match="is closed"):
            await session.send("anyone?")
    await assert_closed(agent_client, session.id)


async def test_a_session_or_run_that_does_not_exist_is_named(agent_client: AgentClient):
    with pytest.raises(SessionNotFoundError, match="session-nobody"):
        await agent_client.get_session("session-nobody").status()
    with pytest.raises(RunNotFoundError, match="run-nobody"):
        await agent_client.get_run("run-nobody").result()


async def test_a_single_runs_id_read_as_a_session_says_what_it_is(agent_client: AgentClient):
    """GET /v1/sessions/run-... was a 500 with a traceback (a raw "Query handler for
    'status' expected but not found")."""
    async with build_worker(agent_client, {"echo": ToolCallingAgent(ScriptedModel(["hi"]))}):
        run = await agent_client.start_run("echo", "hello")
        await run.result()
        with pytest.raises(SessionNotFoundError, match=r"is not a session .* get_run\(\)"):
            await agent_client.get_session(run.id).status()


async def test_an_id_in_use_is_refused_for_runs_sessions_and_forks(agent_client: AgentClient):
    async with build_worker(agent_client, agents()):
        session = await agent_client.start_session("echo")
        await session.send("hi")
        with pytest.raises(AlreadyStartedError, match=session.id):
            await agent_client.start_session("echo", session_id=session.id)
        with pytest.raises(AlreadyStartedError, match=session.id):
            await agent_client.start_run("echo", "hi", workflow_id=session.id)
        with pytest.raises(AlreadyStartedError, match=session.id):
            await agent_client.fork(session.id, session_id=session.id)
        assert (await session.send("still mine")).output == "ok"
        await session.close()
    await assert_closed(agent_client, session.id)


async def test_forking_what_is_not_there_names_the_source_or_the_turn(agent_client: AgentClient):
    with pytest.raises(InvalidInputError, match="There is no workflow session-nobody"):
        await agent_client.fork("session-nobody")
    async with build_worker(agent_client, agents()):
        session = await agent_client.start_session("echo")
        await session.send("hi")
        with pytest.raises(InvalidInputError, match="there is no turn 5"):
            await agent_client.fork(session.id, at_turn=5)
        with pytest.raises(InvalidInputError, match="msg-nope"):
            await agent_client.fork(session.id, at_message="msg-nope")
        await session.close()
    await assert_closed(agent_client, session.id)


# --- the CLI -------------------------------------------------------------------------


def ratchet(*args: str, address: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ratchet", *args, "--address", address],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_one_clear_line(done: subprocess.CompletedProcess[str], fix: str) -> None:
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    assert fix in done.stderr, done.stderr


def test_the_cli_names_a_bad_status_filter(temporal_server):
    done = ratchet("sessions", "list", "--status", "sleeping", address=temporal_server.address)
    assert_one_clear_line(done, "invalid choice: 'sleeping'")
    assert "awaiting_approval" in done.stderr


def test_the_cli_filters_by_an_agent_name_with_quotes_as_that_name(temporal_server):
    """The name is escaped, not refused, and cannot end its quotes: it lists nothing."""
    done = ratchet("sessions", "list", "--agent", "pay' OR 'x", address=temporal_server.address)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[:7] == [
        "id",
        "kind",
        "agent",
        "status",
        "turns",
        "tokens",
        "started",
    ]
    assert all(set(cell) == {"-"} for cell in done.stdout.split()[7:])  # a rule, no row


def test_the_cli_names_a_session_that_does_not_exist(temporal_server):
    done = ratchet("sessions", "show", "session-nobody", address=temporal_server.address)
    assert_one_clear_line(done, "session-nobody")


def test_the_cli_refuses_a_max_turns_out_of_range(temporal_server):
    done = ratchet("run", "echo", "hi", "--max-turns", "0", address=temporal_server.address)
    assert_one_clear_line(done, "--max-turns: '0' is not a whole number of at least 1")
    assert done.returncode == 2  # refused by the parser, before anything connects


def test_the_cli_worker_names_an_agents_module_it_cannot_import(temporal_server):
    done = ratchet("worker", "--agents", "nowhere.agents:AGENTS", address=temporal_server.address)
    assert_one_clear_line(done, "nowhere")


def test_the_cli_worker_names_a_missing_agents_attribute(temporal_server):
    done = ratchet(
        "worker", "--agents", "tests.logged_agents:MISSING", address=temporal_server.address
    )
    assert_one_clear_line(done, "MISSING")


@pytest.mark.slow  # a child process
def test_the_cli_worker_refuses_an_agent_that_is_no_factory_before_it_connects(tmp_path):
    (tmp_path / "broken.py").write_text("AGENTS = {'a': 1}\n")
    done = subprocess.run(
        [sys.executable, "-m", "ratchet", "worker", "--agents", "broken:AGENTS"],
        cwd=tmp_path,  # "worker ready", then every run of 'a' retried a TypeError for ever
        env={**os.environ, "TEMPORAL_ADDRESS": "127.0.0.1:1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert_one_clear_line(done, "Agent 'a' is 1, a int: give an Agent")


@pytest.mark.slow  # a child process
def test_the_cli_worker_hosts_no_agents_it_was_not_given():
    env = {k: v for k, v in os.environ.items() if k != "RATCHET_AGENTS"}
    done = subprocess.run(
        [sys.executable, "-m", "ratchet", "worker", "--address", "127.0.0.1:1"],
        cwd=ROOT,  # the demo's agents, silently, before
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert_one_clear_line(
        done, "name the agents to host: --agents module:ATTR (or $RATCHET_AGENTS)"
    )


@pytest.mark.slow  # a child process
def test_the_cli_worker_refuses_a_grace_period_that_is_not_seconds():
    for value in ("-5", "soon", "inf"):
        done = ratchet("worker", "--grace-period", value, address="127.0.0.1:1")
        assert_one_clear_line(done, f"{value!r} is not a finite number of seconds >= 0")


@pytest.mark.parametrize("verb", ["run", "rerun"])
def test_the_cli_eval_names_a_directory_given_for_a_file(temporal_server, tmp_path, verb):
    given = (
        ["run", str(tmp_path), "--baseline", "a"]
        if verb == "run"
        else ["rerun", "--dataset", str(tmp_path)]
    )
    done = ratchet("eval", *given, "--agent", "b", address=temporal_server.address)
    assert done.returncode == 2, done.stderr  # exit 1 and an IsADirectoryError traceback before
    assert done.stderr.count("\n") == 1, done.stderr
    assert_one_clear_line(done, f"{tmp_path} is a directory: give the")


async def test_rerunning_a_source_that_is_not_there_says_to_export_it_first(
    agent_client: AgentClient,
):
    with pytest.raises(NotFoundError) as e:  # a raw temporalio RPCError before
        await rerun(agent_client, "session-gone", agent="echo")
    assert "There is no session or run 'session-gone'" in str(e.value)
    assert "`ratchet eval export`" in str(e.value)


async def test_build_worker_refuses_a_negative_grace_period(agent_client: AgentClient):
    with pytest.raises(ConfigurationError, match="graceful_shutdown_timeout=.* is negative"):
        build_worker(agent_client, agents(), graceful_shutdown_timeout=timedelta(seconds=-1))


def test_every_failure_of_a_type_is_catchable_as_that_type_not_only_the_first():
    first = run_failed("run-a", "answered 500", "ModelError")
    second = run_failed("run-b", "answered 500", "ModelError")
    assert isinstance(first, ModelError) and isinstance(second, ModelError)
    assert isinstance(second, RunFailedError) and type(first) is type(second)


async def test_an_empty_agent_name_is_refused_before_anything_starts(agent_client: AgentClient):
    # `ratchet run "" hi` started a run that failed only on its worker.
    for name in ("", "  "):
        with pytest.raises(InvalidInputError, match="agent's name is empty"):
            await agent_client.start_run(name, "hi", workflow_id=f"run-empty-{len(name)}")
        await assert_never_started(agent_client, f"run-empty-{len(name)}")
        with pytest.raises(InvalidInputError, match="agent's name is empty"):
            await agent_client.start_session(name, session_id=f"session-empty-{len(name)}")
        await assert_never_started(agent_client, f"session-empty-{len(name)}")
