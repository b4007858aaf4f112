"""Ratchet in a Temporal app you already have: two temporalio plugins.

``RatchetClientPlugin`` goes on the client (Ratchet's data converter, and the
encryption, payload storage and tracing you configure); ``RatchetPlugin`` goes on
each worker that hosts agents, next to your own workflows and activities.
"""

import os

from temporalio import activity
from temporalio.client import Client
from temporalio.worker import Worker

import ratchet
from ratchet import AgentClient, RatchetClientPlugin, RatchetPlugin, ScriptedModel, ToolCallingAgent


@activity.defn
async def send_email(to: str) -> str:  # one of your app's activities
    return f"sent to {to}"


def greeter() -> ToolCallingAgent:
    return ToolCallingAgent(ScriptedModel(["Hello from an agent."]), [])


async def main() -> int:
    address = os.environ.get("TEMPORAL_ADDRESS", "localhost:7233")
    client = await Client.connect(address, plugins=[RatchetClientPlugin()])
    worker = Worker(
        client,
        task_queue="my-app",
        activities=[send_email],
        plugins=[RatchetPlugin({"greeter": greeter})],
    )
    async with worker:
        agents = AgentClient(client, task_queue="my-app")  # runs and sessions on your queue
        print((await agents.run("greeter", "hi")).output)
    return 0


if __name__ == "__main__":
    ratchet.run_main(main)
