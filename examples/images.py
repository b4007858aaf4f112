"""An image in a message: ``Message.user(text, ImagePart.of(data, media_type))``.
OpenAI, Anthropic and Responses models send it as their own image blocks; here a
scripted model only reports what it was given. Parts over 256 KiB need
``payload_storage=`` on the client (they then travel by reference).
"""

import ratchet
from ratchet import AgentClient, Message, ScriptedModel, ToolCallingAgent, build_worker
from ratchet.types import ImagePart

PIXEL = bytes.fromhex(  # a 1x1 PNG
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a4c50000000049454e44ae426082"
)


def describe(messages, context) -> str:
    parts = [p for m in messages for p in m.parts]
    return f"I was shown {len(parts)} image(s): {', '.join(p.media_type for p in parts)}"


async def main() -> int:
    client = await AgentClient.connect(task_queue="images-example")
    agent = ToolCallingAgent(ScriptedModel(describe))  # or OpenAIChatModel("gpt-4o-mini")
    async with build_worker(client, {"eyes": agent}):
        session = await client.start_session("eyes")
        photo = ImagePart.of(PIXEL, "image/png")  # or ImagePart(url="https://...")
        result = await session.send([Message.user("What is in this picture?", photo)])
        print(result.output)
        await session.close()
    assert result.output == "I was shown 1 image(s): image/png"
    return 0


if __name__ == "__main__":
    ratchet.run_main(main)
