"""Session sends under fault: does a message ever run twice, or get lost?

    .venv/bin/python -m bench.send_chaos [--seeds 1 2 3]

The shape of ``tests/chaos.py``, once per seed on one dev server: 5 sessions x 20
sends, each message a model call, a tool call (its side effect logged with its
idempotency key) and an answer; two worker processes, one SIGKILLed every 3-6 s
and replaced; sessions continue as new every 5 messages; a send that fails for a
moment is sent again with the same request id. Target (issue 28): zero messages
run twice, zero lost.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import tempfile
import uuid
from pathlib import Path

from ratchet.devserver import DevServer
from ratchet.process import hard_exit
from tests.chaos import chaos_sends
from tests.conftest import worker_process

from ._results import write_result

RESULTS = Path(__file__).parent / "results"


async def measure(seeds: list[int]) -> dict:
    work = Path(tempfile.mkdtemp(prefix="bench-send-chaos-"))
    server = DevServer.start(ui=False, log_dir=work)
    rounds = []
    try:
        for seed in seeds:
            queue = f"chaos-{seed}-{uuid.uuid4().hex[:6]}"
            log_path = work / f"events-{seed}.log"
            log_path.touch()
            report = await chaos_sends(
                server,
                queue,
                log_path,
                lambda q=queue, p=log_path: worker_process(server, q, p),
                seed=seed,
            )
            rounds.append(dataclasses.asdict(report))
            print(json.dumps(rounds[-1]), flush=True)
    finally:
        server.stop()
    return {
        "rounds": rounds,
        "sends": sum(r["sends"] for r in rounds),
        "kills": sum(r["kills"] for r in rounds),
        "run_twice": sum(len(r["run_twice"]) for r in rounds),
        "lost": sum(len(r["lost"]) for r in rounds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--out", type=Path, default=RESULTS / "send_chaos.json")
    args = parser.parse_args()
    result = asyncio.run(measure(args.seeds))
    write_result(result, args.out, "send_chaos")
    print(json.dumps({k: v for k, v in result.items() if k != "rounds"}, indent=1))


if __name__ == "__main__":
    main()
    hard_exit(0)  # the SDK's runtime can abort the interpreter at exit
