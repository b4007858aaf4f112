"""A session: one long-lived workflow per conversation.

Each ``send`` runs the agent on the session's thread, inside the session's
workflow; the thread and state carry over from one message to the next.
"""

import ratchet
from ratchet import AgentClient, ScriptedModel, SessionOptions, ToolCallingAgent, build_worker
from ratchet.agents import KeepLastTurns


def concierge() -> ToolCallingAgent:
    return ToolCallingAgent(ScriptedModel(["Lisbon, I'd say.", "Then Porto: an hour away."]), [])


async def main() -> int:
    client = await AgentClient.connect(task_queue="sessions-example")
    options = SessionOptions(
        steering="queue",  # a message sent during a run waits its turn ("interrupt", "reject")
        compaction=KeepLastTurns(max_messages=200, turns=50),  # the agent's view, not the log
        token_budget=100_000,  # all the session's runs together
    )
    async with build_worker(client, {"concierge": concierge}):
        session = await client.start_session("concierge", options=options)
        first = await session.send("Oslo or Lisbon this weekend?")
        second = await session.send("And somewhere near it the week after?")
        print(first.output, "/", second.output)
        thread = await session.thread()
        print(f"{len(thread.messages)} messages in session {session.id}")
        later = client.get_session(session.id)  # from anywhere, any time
        status = await later.status()
        print(f"{status.status}: {status.runs} runs, {status.used_tokens} tokens")
        await later.close()  # messages already queued finish first
    return 0


if __name__ == "__main__":
    ratchet.run_main(main)
