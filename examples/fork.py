"""Fork and time travel: read a session as it was after any turn, and start a new
session from there. The source is only read; the fork copies no messages.
"""

import ratchet
from ratchet import Agent, AgentClient, Message, Result, RunContext, Thread, build_worker


class Planner(Agent):
    """Answers with every user message it has seen so far."""

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        seen = [m.text for m in thread.messages if m.role == "user"]
        return Result(final_response=Message.assistant(" + ".join(seen)))


async def main() -> int:
    client = await AgentClient.connect(task_queue="fork-example")
    async with build_worker(client, {"planner": Planner}):
        source = await client.start_session("planner")
        for wish in ("Lisbon", "three days", "by train"):
            await source.send(wish)

        checkpoint = await client.checkpoint(source.id, at_turn=2)  # thread + state after turn 2
        print(f"after turn {checkpoint.turn}: {checkpoint.messages[-1].text}")

        fork = await client.fork(source.id, at_turn=2)  # a new session from that point
        print("fork:  ", (await fork.send("by plane")).output)
        print("source:", (await source.send("with a bike")).output)
        for session in (source, fork):
            await session.close()
    return 0


if __name__ == "__main__":
    ratchet.run_main(main)
