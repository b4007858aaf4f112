"""Several agents: a triage agent hands the conversation to billing, which asks a
researcher (a sub-agent, its own child workflow) before it answers.
"""

import ratchet
from ratchet import AgentClient, RunOptions, ScriptedModel, ToolCallingAgent, build_worker
from ratchet.agents import agent_tool


def triage() -> ToolCallingAgent:
    model = ScriptedModel([ScriptedModel.call("transfer_to_billing")])
    return ToolCallingAgent(model, [], handoffs=["billing"])  # adds a transfer_to_billing tool


def billing() -> ToolCallingAgent:
    model = ScriptedModel(
        [
            ScriptedModel.call("researcher", input="What did acme pay in March?"),
            "You paid 300 in March; the 500 invoice is for April.",
        ]
    )
    return ToolCallingAgent(model, [agent_tool("researcher", "Looks up a customer's payments.")])


def researcher() -> ToolCallingAgent:
    return ToolCallingAgent(ScriptedModel(["acme paid 300 on 3 March."]), [])


AGENTS = {"triage": triage, "billing": billing, "researcher": researcher}


async def main() -> int:
    client = await AgentClient.connect(task_queue="several-agents-example")
    async with build_worker(client, AGENTS):
        options = RunOptions(token_budget=50_000)  # sub-agents spend from the same budget
        result = await client.run("triage", "Why is my invoice 500?", options=options)
    print(f"{result.agent}: {result.output}")
    print(f"{result.usage.total_tokens} tokens, sub-agent's included")
    return 0


if __name__ == "__main__":
    ratchet.run_main(main)
