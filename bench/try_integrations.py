"""Smoke run of bench.integrations: both integrations at N=10 and N=50 on one dev server.

    .venv/bin/python -m bench.try_integrations [--steps 10 50]

Prints each workflow's history_size_bytes and history_length as the server reports them.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from temporalio.client import Client

from bench.integrations import IntegrationRunFailed, run_openai_agents, run_pydantic_ai
from ratchet.devserver import DevServer
from ratchet.testing import OpenAIServer

RUNNERS = {"openai-agents": run_openai_agents, "pydantic-ai": run_pydantic_ai}


async def history(client: Client, workflow_id: str, run_id: str | None) -> tuple[int, int, str]:
    desc = await client.get_workflow_handle(workflow_id, run_id=run_id).describe()
    info = desc.raw_description.workflow_execution_info
    return info.history_size_bytes, info.history_length, desc.status.name if desc.status else "?"


async def main(steps_list: list[int], names: list[str]) -> None:
    with DevServer.start(ui=False) as server:
        client = await Client.connect(server.address)
        print(
            f"{'integration':<14} {'N':>4} {'history bytes':>14} {'events':>7} "
            f"{'requests':>8} {'secs':>6}  status"
        )
        for steps in steps_list:
            with OpenAIServer.tool_loop(steps) as stub:
                for name in names:
                    before = stub.request_count
                    started = time.perf_counter()
                    try:
                        wid, rid = await RUNNERS[name](server.address, steps, stub.base_url)
                        note = ""
                    except IntegrationRunFailed as e:
                        wid, rid, note = e.workflow_id, e.run_id, f"  FAILED: {e}"
                    secs = time.perf_counter() - started
                    size, length, status = await history(client, wid, rid)
                    print(
                        f"{name:<14} {steps:>4} {size:>14,} {length:>7} "
                        f"{stub.request_count - before:>8} {secs:>6.1f}  {status}{note}",
                        flush=True,
                    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, nargs="+", default=[10, 50])
    parser.add_argument("--only", choices=sorted(RUNNERS), nargs="+", default=list(RUNNERS))
    args = parser.parse_args()
    asyncio.run(main(args.steps, args.only))
