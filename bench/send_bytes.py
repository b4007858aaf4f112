"""Where a session's history bytes go, per send, by event type and payload.

    .venv/bin/python -m bench.send_bytes [--sends 30]

Drives ``bench.sessions``' realistic agent (a tool every third send) through a
session on a dev server of its own, then reads the session's history and prints,
per send: the events of each type, their bytes, and of those the payload bytes
(inputs, results, Update requests and outcomes, signals, markers, memos and
search attributes), beside the thread's message bytes.
"""

from __future__ import annotations

import argparse
import asyncio
from collections import defaultdict

from google.protobuf.message import Message as Proto
from temporalio.api.common.v1 import Payload

from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.worker import build_worker

from .sessions import USER, realistic


def payload_bytes(message: Proto) -> int:
    """The bytes of every Payload inside ``message``."""
    if isinstance(message, Payload):
        return message.ByteSize()
    total = 0
    for field, value in message.ListFields():
        if field.type != field.TYPE_MESSAGE:
            continue
        if isinstance(value, Proto):
            total += payload_bytes(value)
            continue
        items = value.values() if hasattr(value, "values") else value  # a map, or a list
        total += sum(payload_bytes(item) for item in items if isinstance(item, Proto))
    return total


async def main(sends: int) -> None:
    with DevServer.start(ui=False) as server:
        client = await AgentClient.connect(server.address, task_queue="send-bytes")
        async with build_worker(client, {"real": realistic}):
            session = await client.start_session("real")
            for i in range(1, sends + 1):
                await session.send(f"{i} {USER}")
            thread = await session.thread()
            message_bytes = sum(len(m.model_dump_json()) for m in thread.messages)
            counts: dict[str, int] = defaultdict(int)
            sizes: dict[str, int] = defaultdict(int)
            payloads: dict[str, int] = defaultdict(int)
            await session.close()
            runs = [
                r.run_id
                async for r in client.temporal.list_workflows(f"WorkflowId = '{session.id}'")
            ]
            for run_id in runs:  # every workflow run of the session (continue-as-new)
                handle = client.temporal.get_workflow_handle(session.id, run_id=run_id)
                async for event in handle.fetch_history_events():
                    kind = event.WhichOneof("attributes").removesuffix("_event_attributes")
                    counts[kind] += 1
                    sizes[kind] += event.ByteSize()
                    payloads[kind] += payload_bytes(event)
    total = sum(sizes.values())
    print(
        f"{sends} sends, {len(runs)} workflow runs, {len(thread.messages)} messages, "
        f"{message_bytes / sends:.0f} B/send"
    )
    print(f"history {total / sends:.0f} B/send = {total / message_bytes:.3f}x message bytes")
    print(f"{'event':52} {'per send':>8} {'B/send':>8} {'payload':>8}")
    for kind in sorted(sizes, key=sizes.__getitem__, reverse=True):
        print(
            f"{kind:52} {counts[kind] / sends:8.2f} {sizes[kind] / sends:8.0f}"
            f" {payloads[kind] / sends:8.0f}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sends", type=int, default=30)
    asyncio.run(main(parser.parse_args().sends))
