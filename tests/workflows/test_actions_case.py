"""One case of bench/actions.py's latency sweep, in CI: a 3-turn tool run whose model
calls take 0.1 s each (a provider stub over HTTP), metered by the dev server as Temporal
Cloud bills it, costs at most the cheapest peer's actions plus one, as committed in
bench/results/actions_by_latency.json (the peers are not installed here). The 6 s
case differs by liveness heartbeats only, and those are
tests/workflows/test_heartbeat_billing.py's: a loaded machine can stretch a 6 s turn
past the 8 s at which one is due, which would make a count exact to one flaky here."""

from __future__ import annotations

import json

import pytest

from bench.actions import RESULTS_BY_LATENCY, Meter, change_versions, fetch, slow_loop, totals
from ratchet.agents import OpenAIChatModel, ToolCallingAgent
from ratchet.client import AgentClient
from ratchet.devserver import DevServer, free_port
from ratchet.worker import build_worker

MODEL_SECONDS, TURNS = 0.1, 3
PEERS = ("temporalio-openai-agents", "pydantic-ai")


def committed_case() -> dict[str, float]:
    """Each engine's actions per run of this case as Cloud bills them (less the
    ``TemporalChangeVersion`` upserts of ``workflow.patched``, which it exempts)."""
    cases = json.loads(RESULTS_BY_LATENCY.read_text())["cases"]
    (case,) = [c for c in cases if (c["model_seconds"], c["turns"]) == (MODEL_SECONDS, TURNS)]
    exempt = case["change_version_upserts"]
    return {name: totals(row) - exempt[name] for name, row in case["engines"].items()}


@pytest.mark.slow  # its own dev server, with metering
async def test_a_three_turn_tool_run_costs_the_cheapest_peers_actions_plus_one():
    committed = committed_case()
    cheapest_peer = min(committed[name] for name in PEERS)
    port = free_port()
    with DevServer.start(ui=False, extra_args=["--metrics-port", str(port)]) as server:
        client = await AgentClient.connect(server.address, task_queue="actions-case")
        meter = Meter(port)
        with slow_loop(TURNS - 1, MODEL_SECONDS) as stub:
            model = OpenAIChatModel("bench", base_url=stub.base_url, api_key="bench")
            async with build_worker(client, {"pager": ToolCallingAgent(model, [fetch])}):
                handle = None

                async def run() -> None:
                    nonlocal handle
                    handle = await client.start_run("pager", "go")
                    assert (await handle.result()).turns == TURNS

                metered = await meter.measure(1, run)
            await model.client.close()
        assert handle is not None
        unbilled = await change_versions(client.temporal, handle.id)
    billed = totals(metered) - unbilled
    assert billed <= cheapest_peer + 1, metered
    assert billed == committed["ratchet run (defaults)"], metered  # the figure the docs quote
