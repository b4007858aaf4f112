"""Tools: typed arguments, the turn's context, and side effects that never repeat.

``pay`` passes an idempotency key to the payment API, the same on every retry of
the turn; ``send_invoice`` is durable: its own activity, never run twice once it
has completed. The scripted model first calls ``pay`` with a bad argument: the
validation error becomes a tool result the model reads, not a crash.
"""

import ratchet
from ratchet import AgentClient, RunContext, ScriptedModel, ToolCallingAgent, build_worker, tool

PAYMENTS: dict[str, int] = {}  # stands in for a payment API that deduplicates by key


@tool
async def pay(to: str, amount: int, context: RunContext) -> str:
    """Pay ``amount`` euros to ``to``."""
    PAYMENTS.setdefault(context.idempotency_key(), amount)  # the model never sees `context`
    return f"paid {amount} to {to}"


@tool(durable=True, max_attempts=3, timeout=30)
async def send_invoice(customer: str) -> str:
    """Email ``customer`` their invoice."""
    return f"invoice sent to {customer}"


def billing_agent() -> ToolCallingAgent:
    model = ScriptedModel(
        [
            ScriptedModel.call("pay", to="acme", amount="a lot"),  # not an int
            ScriptedModel.call("pay", to="acme", amount=500),
            ScriptedModel.call("send_invoice", customer="acme"),
            "Paid acme 500 and sent the invoice.",
        ]
    )
    return ToolCallingAgent(model, [pay, send_invoice], instructions="You handle billing.")


async def main() -> int:
    client = await AgentClient.connect(task_queue="tools-example")
    async with build_worker(client, {"billing": billing_agent}):
        handle = await client.start_run("billing", "Pay acme 500 and send the invoice.")
        result = await handle.result()
        thread = (await handle.record()).session.thread
    for message in thread.messages:
        if message.role == "tool":
            print(f"{message.name}: {message.text[:70]}")
    print(result.output)
    assert list(PAYMENTS.values()) == [500]
    return 0


if __name__ == "__main__":
    ratchet.run_main(main)
