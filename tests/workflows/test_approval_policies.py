"""Approval policies: rules by tool name and arguments on the agent, and a session's
own rules, widened by "always allow" or changed while it runs, all in the audit trail."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.client import WorkflowUpdateFailedError

from ratchet.agents import ScriptedModel, ToolCallingAgent, tool
from ratchet.agents._approvals import ApprovalPolicy, allow, ask, deny
from ratchet.client import AgentClient
from ratchet.errors import ApprovalRuleError, DecisionError, InvalidInputError
from ratchet.types import ApprovalRules, RuleChange
from ratchet.wire import RunOptions, SessionOptions
from ratchet.worker import build_worker

RAN: list[str] = []


@tool
def search(query: str) -> str:
    """Search the web."""
    RAN.append(f"search {query}")
    return f"results for {query}"


@tool
def pay(amount: int) -> str:
    """Pay an amount."""
    RAN.append(f"pay {amount}")
    return f"paid {amount}"


@tool
def delete_all() -> str:
    """Delete everything."""
    RAN.append("delete_all")
    return "deleted"


POLICY = ApprovalPolicy(
    allow("search"),
    ask("pay", when=lambda args: args["amount"] > 100),
    allow("pay"),
    deny("delete_*", reason="deleting is done by hand"),
)


def agent(*replies, policy=POLICY) -> ToolCallingAgent:
    return ToolCallingAgent(
        ScriptedModel(list(replies)), tools=[search, pay, delete_all], approval_policy=policy
    )


@pytest.fixture(autouse=True)
def clean_log():
    RAN.clear()


def test_the_first_matching_rule_decides_and_the_default_is_to_ask():
    assert POLICY.decide("search", {})[0] == "allow"
    assert POLICY.decide("pay", {"amount": 500})[0] == "ask"
    assert POLICY.decide("pay", {"amount": 5})[0] == "allow"
    verdict, rule = POLICY.decide("delete_users", {})
    assert verdict == "deny" and rule is not None and rule.reason == "deleting is done by hand"
    assert POLICY.decide("unknown_tool", {}) == ("ask", None)  # safe by default
    assert ApprovalPolicy(default="allow").decide("unknown_tool", {}) == ("allow", None)
    assert POLICY("pay", {"amount": 500}) is True  # the plain approval_policy interface
    with pytest.raises(ApprovalRuleError, match="at least one tool name"):
        allow()


def test_malformed_rules_are_refused_when_built_saying_how_to_write_them():
    with pytest.raises(ApprovalRuleError, match="when= takes a function"):
        ask("pay", when="amount > 100")  # type: ignore[arg-type]
    with pytest.raises(ApprovalRuleError, match=r"ApprovalPolicy\(ask\('pay'\)\)"):
        ApprovalPolicy("pay")  # type: ignore[arg-type]
    with pytest.raises(ApprovalRuleError, match="deny"):
        ApprovalPolicy(default="deny")  # type: ignore[arg-type]
    with pytest.raises(ApprovalRuleError, match="requires_approval takes"):
        tool(requires_approval="yes")(lambda: None)  # type: ignore[arg-type]
    with pytest.raises(ApprovalRuleError, match="approval_policy takes"):
        ToolCallingAgent(ScriptedModel([]), approval_policy="pay")  # type: ignore[arg-type]
    with pytest.raises(ApprovalRuleError, match="function of one argument"):
        ask("pay", when=lambda: True)  # type: ignore[arg-type]
    with pytest.raises(ApprovalRuleError, match="function of one argument"):
        ask("pay", when=lambda name, args: True)  # type: ignore[arg-type]
    with pytest.raises(ApprovalRuleError, match=r"not a list: ApprovalPolicy\(\*rules\)"):
        ApprovalPolicy([allow("a")])  # type: ignore[arg-type]
    with pytest.raises(ApprovalRuleError, match=r"Pass the names themselves: 'a', 'b'"):
        allow(["a", "b"])  # type: ignore[arg-type]


def test_a_later_session_rule_for_a_name_replaces_an_earlier_one():
    rules = ApprovalRules().apply(RuleChange(allow=["search", "read_*"], by="alice"))
    rules = rules.apply(RuleChange(deny=["search"], by="bob"))
    assert rules.verdict("search") == ("deny", "search")
    assert rules.verdict("read_file") == ("allow", "read_*")
    assert rules.apply(RuleChange(ask=["read_*"])).verdict("read_file") is None
    assert [c.by for c in rules.changes] == ["alice", "bob"]


async def test_allowed_calls_run_denied_ones_never_and_asked_ones_wait(
    agent_client: AgentClient,
):
    shopper = agent(
        ScriptedModel.calls(
            ("search", {"query": "tv"}), ("delete_all", {}), ("pay", {"amount": 500})
        ),
        "bought",
    )
    async with build_worker(agent_client, {"shopper": shopper}):
        handle = await agent_client.start_run("shopper", "buy a tv")
        (waiting,) = await handle.wait_for_pending()
        assert waiting.action.call.name == "pay"
        assert RAN == ["search tv"]  # delete_all never ran; pay waits
        await handle.approve(waiting.action.id, by="alice")
        assert (await handle.result()).output == "bought"
        thread = (await handle.record()).session.thread
        audit = await handle.decisions()
    assert RAN == ["search tv", "pay 500"]
    denied = next(m for m in thread.messages if m.role == "tool" and "delete_all" in m.text)
    assert denied.is_error and "deleting is done by hand" in denied.text
    # Every decision is in the audit trail, the agent policy's with the rule that decided.
    assert [(d.by, d.approved) for d in audit if d.kind == "call"] == [
        ("policy", True),
        ("policy", False),
        ("alice", True),
    ]
    assert "rule: allow search" in (audit[0].reason or "")
    assert "rule: deny delete_*" in (audit[1].reason or "")


@pytest.mark.parametrize("session", [False, True], ids=["run", "session"])
async def test_arguments_are_validated_before_any_rule_reads_them(
    agent_client: AgentClient, session: bool
):
    """The docs' own ask("pay", when=lambda a: a["amount"] > 100) on a call without an
    amount: a tool error the model reads (before: KeyError, the turn retried)."""
    shopper = agent(ScriptedModel.call("pay", to="acme"), "I need an amount")
    options = RunOptions(max_attempts=1)
    async with build_worker(agent_client, {"shopper": shopper}):
        if session:
            handle = await agent_client.start_session(
                "shopper", options=SessionOptions(run=options)
            )
            result = await handle.send("pay acme")
            thread = (await handle.thread()).messages
            await handle.close()
        else:
            run = await agent_client.start_run("shopper", "pay acme", options=options)
            result = await run.result()
            thread = (await run.record()).session.thread.messages
    assert result.output == "I need an amount" and RAN == []
    (error,) = [m for m in thread if m.role == "tool"]
    assert error.is_error and "invalid arguments for pay" in error.text and "amount" in error.text


async def test_a_rule_that_raises_fails_the_run_at_once_naming_the_rule(
    agent_client: AgentClient,
):
    asked: list[dict] = []

    def in_euros(args: dict) -> bool:
        asked.append(args)
        return args["currency"] == "EUR"  # the author's bug: pay has no currency

    shopper = agent(
        ScriptedModel.call("pay", amount=5),
        "paid",
        policy=ApprovalPolicy(ask("pay", when=in_euros)),
    )
    async with build_worker(agent_client, {"shopper": shopper}):
        handle = await agent_client.start_run(
            "shopper", "pay 5", options=RunOptions(max_attempts=3)
        )
        with pytest.raises(ApprovalRuleError) as failed:
            await handle.result()
    message = str(failed.value)
    assert "ask pay (when in_euros at test_approval_policies.py:" in message
    assert "KeyError" in message and "'currency'" in message and "pay" in message
    assert asked == [{"amount": 5}] and RAN == []  # one attempt: it is not retried


async def test_always_allow_in_a_session_stops_the_asking_even_after_continue_as_new(
    agent_client: AgentClient,
):
    careful = agent(
        ScriptedModel.call("pay", amount=500),
        "paid once",
        ScriptedModel.call("pay", amount=700),
        "paid twice",
    )
    async with build_worker(agent_client, {"careful": careful}):
        session = await agent_client.start_session(
            "careful", options=SessionOptions(continue_as_new_after_runs=1)
        )
        first = asyncio.create_task(session.send("pay 500"))
        (waiting,) = await session.wait_for_pending()
        decision = await session.approve(waiting.action.id, by="alice", always=True)
        assert decision.always
        assert (await first).output == "paid once"
        # A new workflow run (continue-as-new after each run), the same session rules.
        assert (await session.send("pay 700")).output == "paid twice"
        rules = await session.approval_rules()
        audit = await session.decisions()
        fork = await agent_client.fork(session.id, at_turn=1)
        assert (await fork.approval_rules()).allow == []  # granted for that session only
        await fork.close()
        await session.close()
    assert RAN == ["pay 500", "pay 700"]
    assert rules.allow == ["pay"] and rules.changes[0].by == "alice"
    calls = [d for d in audit if d.kind == "call"]  # across continue-as-new
    assert [(d.by, d.approved, d.always) for d in calls] == [
        ("alice", True, True),
        ("policy", True, False),
    ]
    assert calls[1].reason == "session rule: allow pay"
    changes = [d for d in audit if d.kind == "rules"]
    assert len(changes) == 1 and changes[0].by == "alice" and "allow pay" in changes[0].reason


async def test_a_rule_change_while_a_call_waits_decides_it(agent_client: AgentClient):
    shopper = agent(ScriptedModel.call("pay", amount=900), "done")
    async with build_worker(agent_client, {"shopper": shopper}):
        handle = await agent_client.start_run("shopper", "pay 900")
        await handle.wait_for_pending()
        rules = await handle.set_approvals(deny=["pay"], by="bob", reason="over budget")
        assert (await handle.result()).output == "done"
        audit = await handle.decisions()
        thread = (await handle.record()).session.thread
    assert rules.deny == ["pay"] and RAN == []
    (call,) = [d for d in audit if d.kind == "call"]
    assert not call.approved and call.by == "policy" and call.reason == "session rule: deny pay"
    assert any("rejected" in m.text for m in thread.messages if m.role == "tool")
    (change,) = [d for d in audit if d.kind == "rules"]
    assert change.by == "bob" and change.reason == "deny pay (over budget)"


async def test_bad_rule_changes_and_decisions_are_refused_saying_why(agent_client: AgentClient):
    shopper = agent(ScriptedModel.call("pay", amount=900), "done")
    async with build_worker(agent_client, {"shopper": shopper}):
        handle = await agent_client.start_run("shopper", "pay 900")
        (waiting,) = await handle.wait_for_pending()
        with pytest.raises(InvalidInputError, match="names no tools"):
            await handle.set_approvals()
        with pytest.raises(InvalidInputError, match="one verdict"):
            await handle.set_approvals(allow=["pay"], deny=["pay"])
        with pytest.raises(InvalidInputError, match=r"allow=\['pay'\]"):
            await handle.set_approvals(allow="pay")  # type: ignore[arg-type]
        with pytest.raises(WorkflowUpdateFailedError) as refused:  # no client sends this
            await handle.workflow.execute_update(
                "reject", {"id": waiting.action.id, "always": True}
            )
        assert "always=True goes with an approval" in str(refused.value.cause)
        with pytest.raises(DecisionError, match="no pending call"):
            await handle.approve("call_nope", always=True)
        await handle.approve(waiting.action.id)
        assert (await handle.result()).output == "done"
        assert await handle.approval_rules() == ApprovalRules()  # nothing was changed


async def test_a_session_rule_change_without_a_run_holds_for_the_next_run(
    agent_client: AgentClient,
):
    shopper = agent(ScriptedModel.call("pay", amount=900), "done")
    async with build_worker(agent_client, {"shopper": shopper}):
        session = await agent_client.start_session("shopper")
        await session.set_approvals(allow=["pay"], by="carol")
        assert (await session.send("pay 900")).output == "done"
        await session.close()
    assert RAN == ["pay 900"]
