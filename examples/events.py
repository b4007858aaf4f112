"""Live events: follow a run as it happens. Each kind of event is a class with
typed ``data``; ``context.emit`` sends your own.
"""

import asyncio

import ratchet
from ratchet import Agent, AgentClient, Message, Result, RunContext, Thread, build_worker
from ratchet.client import CustomEvent, StatusChanged, TurnCompleted, TurnStarted


class Counter(Agent):
    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        await context.emit({"step": context.turn, "of": 3})  # to whoever watches
        if context.turn < 3:
            return Result()
        return Result(final_response=Message.assistant("counted to 3"))


async def watch(handle: ratchet.RunHandle) -> None:
    async for event in handle.events():  # ends when the run does
        match event:
            case TurnStarted():
                print(f"turn {event.turn} started")
            case CustomEvent(data=data):
                print(f"  emitted {data}")
            case TurnCompleted(data=data):
                print(f"turn {event.turn} done: {data.tokens} tokens")
            case StatusChanged():
                print("status:", event.status)
            case _:
                pass  # ToolCalled, ToolResult, TextDelta, Retry, ...


async def main() -> int:
    client = await AgentClient.connect(task_queue="events-example")
    async with build_worker(client, {"counter": Counter}):
        handle = await client.start_run("counter", "count")
        watcher = asyncio.create_task(watch(handle))
        result = await handle.result()
        await watcher
    print(result.output)
    return 0


if __name__ == "__main__":
    ratchet.run_main(main)
