"""What agent state costs: serializer speed, and history bytes per turn.

    .venv/bin/python -m bench.state_cost [--turns 50] [--repeat 2000]

1. Serializers, in process: store and read back one typical state value (a
   pydantic cart of 50 lines, a dataclass, a dict of rich scalars) with
   ``JSONSerializer`` and ``PickleSerializer``, alternating, medians of 5 rounds.
2. History, on a dev server: the same agent runs ``--turns`` turns with no
   state, with about 1 KB of state it reads every turn but changes only once,
   and with about 1 KB it changes every turn. History bytes per turn are read
   from the server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

from ratchet.agents import Agent, JSONSerializer, PickleSerializer, Result, RunContext, Thread
from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.types import Message
from ratchet.wire import RunOptions
from ratchet.worker import build_worker

from .state_types import typical_state

RESULTS = Path(__file__).parent / "results"


def serializer_round(repeat: int) -> dict[str, float]:
    value = typical_state()
    out = {}
    for serializer in (JSONSerializer(), PickleSerializer("bench-key-" + "x" * 32)):
        start = time.perf_counter()
        for _ in range(repeat):
            serializer.deserialize(json.loads(json.dumps(serializer.serialize(value))))
        out[serializer.name] = (time.perf_counter() - start) / repeat * 1e6
    return out


class NoteTaker(Agent):
    """Each turn reads its state; ``mode`` says whether it has state and how often it changes."""

    def __init__(self, mode: str, turns: int) -> None:
        self.mode, self.turns = mode, turns

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        if self.mode != "none":
            notes = context.state.get("notes", default=[])
            if not notes:  # about 1 KB: ten notes of 100 characters
                context.state.update("notes", [f"note {i}: " + "n" * 92 for i in range(10)])
            elif self.mode == "every turn":
                context.state.update("notes", [*notes[1:], f"turn {context.turn}: " + "n" * 90])
        if context.turn >= self.turns:
            return Result(final_response=Message.assistant("done"))
        await thread.on_new_messages([Message.assistant(f"turn {context.turn}")])
        return Result()


async def history_bytes(client: AgentClient, turns: int) -> dict[str, float]:
    modes = ["none", "read, changed once", "every turn"]
    agents = {mode: (lambda m=mode: NoteTaker(m, turns)) for mode in modes}
    out = {}
    async with build_worker(client, agents):
        for mode in modes:
            handle = await client.start_run(
                mode, "take notes", options=RunOptions(max_turns=turns + 1)
            )
            await handle.result()
            history = await handle.workflow.fetch_history()
            size = sum(e.ByteSize() for e in history.events)
            out[mode] = size / turns
    return out


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()

    rounds = [serializer_round(args.repeat) for _ in range(5)]
    speed = {name: statistics.median(r[name] for r in rounds) for name in rounds[0]}
    state_bytes = len(json.dumps(JSONSerializer().serialize(typical_state())))
    print(f"typical state: {state_bytes} bytes as JSON")
    for name, us in speed.items():
        print(f"  {name:6} store + read back: {us:7.1f} µs")
    print(f"  pickle / json: {speed['pickle'] / speed['json']:.2f}x")

    with DevServer.start(ui=False) as server:
        client = await AgentClient.connect(server.address, task_queue="bench-state")
        per_turn = await history_bytes(client, args.turns)
    print(f"history bytes per turn over {args.turns} turns:")
    for mode, size in per_turn.items():
        extra = size - per_turn["none"]
        print(f"  {mode:20} {size:8.0f}  (+{extra:.0f} over no state)")

    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "state_cost.json").write_text(
        json.dumps(
            {
                "typical_state_json_bytes": state_bytes,
                "serializer_us": speed,
                "history_bytes_per_turn": per_turn,
                "turns": args.turns,
            },
            indent=2,
        )
        + "\n"
    )


if __name__ == "__main__":
    asyncio.run(main())
