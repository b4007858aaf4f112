"""A typed answer: ``output_type=Invoice`` makes the model answer with the
``final_result`` tool, validated in the turn. The scripted model's first answer is
invalid: the validation error goes back to it as a tool error and it answers again.
The run's final message is the invoice's JSON; ``output_as`` parses it.
"""

from pydantic import BaseModel

import ratchet
from ratchet import AgentClient, ScriptedModel, ToolCallingAgent, build_worker


class Invoice(BaseModel):
    customer: str
    total_eur: float


def invoicing_agent() -> ToolCallingAgent:
    model = ScriptedModel(
        [
            ScriptedModel.call("final_result", customer="acme", total_eur="a lot"),  # invalid
            ScriptedModel.call("final_result", customer="acme", total_eur=120.5),
        ]
    )
    return ToolCallingAgent(model, output_type=Invoice, instructions="You read invoices.")


async def main() -> int:
    client = await AgentClient.connect(task_queue="typed-output-example")
    async with build_worker(client, {"invoicing": invoicing_agent}):
        result = await (await client.start_run("invoicing", "What does acme owe?")).result()
    invoice = result.output_as(Invoice)  # the final message is its JSON
    print(f"{invoice.customer} owes {invoice.total_eur:.2f} EUR (after {result.turns} turns)")
    assert invoice == Invoice(customer="acme", total_eur=120.5)
    return 0


if __name__ == "__main__":
    ratchet.run_main(main)
