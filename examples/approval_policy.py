"""An approval policy and a session's own rules: searching runs at once, a large
payment waits for a person, deleting never runs. Approving a payment with
``always=True`` allows payments for the rest of the session, so the second one
does not ask; ``decisions()`` is the audit trail of both.
"""

import asyncio

import ratchet
from ratchet import AgentClient, ScriptedModel, ToolCallingAgent, build_worker, tool
from ratchet.agents import ApprovalPolicy, allow, ask, deny


@tool
def search(query: str) -> str:
    """Search the catalogue."""
    return f"3 offers for {query}"


@tool
def pay(to: str, amount: int) -> str:
    """Pay ``amount`` euros to ``to``."""
    return f"paid {amount} to {to}"


POLICY = ApprovalPolicy(
    allow("search"),
    ask("pay", when=lambda args: args["amount"] > 100),
    allow("pay"),
    deny("delete_*", reason="deleting is done by hand"),
)  # anything else: ask (safe by default)


def shop_agent() -> ToolCallingAgent:
    model = ScriptedModel(
        [
            ScriptedModel.calls(
                ("search", {"query": "tv"}), ("pay", {"to": "acme", "amount": 500})
            ),
            "Bought the TV.",
            ScriptedModel.call("pay", to="acme", amount=300),
            "Bought the stand.",
        ]
    )
    return ToolCallingAgent(model, [search, pay], approval_policy=POLICY)


async def main() -> int:
    client = await AgentClient.connect(task_queue="approval-policy-example")
    async with build_worker(client, {"shop": shop_agent}):
        session = await client.start_session("shop")
        first = asyncio.create_task(session.send("Buy a TV"))
        (waiting,) = await session.wait_for_pending()  # search ran; the payment waits
        await session.approve(waiting.action.id, by="alice", always=True)
        print((await first).output)
        print((await session.send("And a stand")).output)  # allowed by the session rule
        for decision in await session.decisions():
            print(f"{decision.kind:5} {decision.by}: {decision.reason or 'approved'}")
        await session.close()
    return 0


if __name__ == "__main__":
    ratchet.run_main(main)
