"""Keyed agent state: a turn is a transaction, and stored types carry a version.

``context.state`` reads and writes the agent's own state; a change becomes real
only with the turn that made it (a failed attempt's changes are dropped). From
outside, ``agent_state()`` returns every agent's state, also after the run ended.
"""

from cart import Cart  # examples/cart.py: stored types live in an importable module

import ratchet
from ratchet import Agent, AgentClient, Message, Result, RunContext, Thread, build_worker


class Shop(Agent):
    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        cart = context.state.get("cart", Cart) or Cart(items=[], currency="EUR")
        cart = cart.model_copy(update={"items": [*cart.items, messages[-1].text]})
        context.state.update("cart", cart)  # committed when this turn's result is
        reply = f"{len(cart.items)} items: {', '.join(cart.items)}"
        return Result(final_response=Message.assistant(reply))


async def main() -> int:
    client = await AgentClient.connect(task_queue="state-example")
    async with build_worker(client, {"shop": Shop}):
        session = await client.start_session("shop")
        await session.send("a book")
        print((await session.send("a lamp")).output)
        cart = (await session.agent_state()).get("cart", Cart)
        print("from outside:", cart)
        saved = await session.export_state()  # JSON-ready: keep it, start from it later
        await session.close()
        copy = await client.start_session("shop", state=saved)
        print((await copy.send("a pen")).output)
        await copy.close()
    return 0


if __name__ == "__main__":
    ratchet.run_main(main)
