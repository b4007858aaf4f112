"""Human in the loop: a payment over 100 waits for a person; a question waits for
an answer. The run waits in workflow code, so no worker slot is held while it does.
"""

from datetime import timedelta

import ratchet
from ratchet import AgentClient, RunOptions, ScriptedModel, ToolCallingAgent, build_worker, tool
from ratchet.agents import ask_user


@tool(requires_approval=lambda args: args["amount"] > 100)  # or True: always
async def pay(to: str, amount: int) -> str:
    """Pay ``amount`` euros to ``to``."""
    return f"paid {amount} to {to}"


def billing_agent() -> ToolCallingAgent:
    model = ScriptedModel(
        [
            ScriptedModel.call("ask_user", question="Which invoice, March or April?"),
            ScriptedModel.calls(
                ("pay", {"to": "acme", "amount": 500}), ("pay", {"to": "cafe", "amount": 4})
            ),
            "Paid the April invoice.",
        ]
    )
    return ToolCallingAgent(model, [pay, ask_user])


async def main() -> int:
    client = await AgentClient.connect(task_queue="approvals-example")
    options = RunOptions(approval_timeout=timedelta(hours=24))  # then undecided calls are rejected
    async with build_worker(client, {"billing": billing_agent}):
        handle = await client.start_run("billing", "Pay acme's invoice.", options=options)

        (question,) = await handle.wait_for_pending()  # status AWAITING_INPUT
        print("asked:", question.action.question)
        await handle.provide_input(question.action.id, "April", by="alice")

        (payment,) = await handle.wait_for_pending()  # AWAITING_APPROVAL: only the 500 waits
        assert payment.action.call is not None
        print("approve?", payment.action.call.describe(60))
        await handle.approve(payment.action.id, by="alice")  # or handle.reject(id, "reason")

        result = await handle.result()
        for decision in await handle.decisions():  # the audit trail
            verdict = decision.answer or ("approved" if decision.approved else "rejected")
            print(f"  {decision.id}: {verdict} by {decision.by}")
    print(result.output)
    return 0


if __name__ == "__main__":
    ratchet.run_main(main)
