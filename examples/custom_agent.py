"""An agent written by hand: ``Agent.run(messages, thread, context) -> Result``.

The agent keeps nothing between calls: it appends what the turn reads and writes
to ``thread`` and returns ``Result()`` ("call me again") or a final response.
Each call is one turn, one Temporal activity, checkpointed when it returns.
"""

import ratchet
from ratchet import Agent, AgentClient, Message, Result, RunContext, Thread, build_worker


class Outline(Agent):
    """First turn: an outline. Second turn: the answer, built on it."""

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)  # the user's message, on the first turn
        topic = next(m.text for m in thread.messages if m.role == "user")
        if context.turn == 1:
            outline = await context.once("outline", lambda: draft_outline(topic), list[str])
            await thread.on_new_messages([Message.assistant("Outline: " + "; ".join(outline))])
            return Result()
        return Result(final_response=Message.assistant(f"{topic}: three parts, as outlined."))


async def draft_outline(topic: str) -> list[str]:
    """An expensive step (a model call, say) that a retried turn does not repeat."""
    return ["why", "how", f"what {topic} costs"]


async def main() -> int:
    client = await AgentClient.connect(task_queue="custom-agent-example")
    async with build_worker(client, {"outline": Outline}):
        result = await client.run("outline", "durable agents")
    print(result.output, f"({result.turns} turns)")
    return 0


if __name__ == "__main__":
    ratchet.run_main(main)
