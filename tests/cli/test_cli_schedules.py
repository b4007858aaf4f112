"""``ratchet schedules``, ``ratchet replay`` and ``ratchet worker --deployment`` (in
process: ``ratchet deploy`` runs in child processes in
tests/durability/test_versioned_deploy.py)."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from temporalio.common import WorkerDeploymentVersion
from temporalio.worker import WorkerDeploymentConfig

from ratchet.cli import main
from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.errors import ConfigurationError
from ratchet.examples import AGENTS
from ratchet.worker import build_worker

from ..conftest import ROOT

HISTORIES = ROOT / "tests" / "histories"


def ratchet(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def listed(capsys: pytest.CaptureFixture[str], name: str) -> str:
    """``schedules list``'s row for ``name``, once the server's list has it (its
    visibility lags a moment behind a create)."""
    deadline = time.monotonic() + 30
    while True:
        rows = [
            r for r in ratchet(capsys, "schedules", "list")[1].splitlines() if r.startswith(name)
        ]
        if rows or time.monotonic() > deadline:
            [row] = rows
            return row
        time.sleep(0.1)


def test_a_schedule_made_listed_fired_paused_and_deleted_from_the_cli(
    temporal_server: DevServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("TEMPORAL_ADDRESS", temporal_server.address)
    name = f"report-{uuid.uuid4().hex[:8]}"
    code, out, err = ratchet(
        capsys, "schedules", "create", name, "Write the report", "--agent", "reporter",
        "--cron", "0 7 * * 1-5", "--task-queue", name,
    )  # fmt: skip
    assert code == 0, err
    assert out.startswith(f"schedule {name}: a run of reporter, 0 7 * * 1-5;")
    assert ratchet(capsys, "schedules", "trigger", name)[1] == f"schedule {name} fired once now\n"
    assert ratchet(capsys, "schedules", "pause", name, "--note", "holidays")[0] == 0
    row = listed(capsys, name)
    assert row.split()[1:8] == ["run", "of", "reporter", "0", "7", "*", "*"]
    assert "paused: holidays" in row
    code, _, err = ratchet(
        capsys, "schedules", "create", name, "x", "--agent", "reporter", "--every", "1h"
    )
    assert code == 1 and "exists already" in err
    assert ratchet(capsys, "schedules", "delete", name)[0] == 0
    code, out, _ = ratchet(capsys, "schedules", "trigger", name)
    assert code == 1 and f"there is no schedule {name!r}" in out


def test_replay_of_saved_histories_passes_and_names_what_it_cannot_replay(
    capsys: pytest.CaptureFixture[str],
):
    moved = str(HISTORIES / "agent_session_moved_to_a_new_build.json")
    assert ratchet(capsys, "replay", moved) == (
        0,
        "1 history replayed against this code: all replay\n",
        "",
    )
    fan_out = str(HISTORIES / "fan_out.json")
    code, out, _ = ratchet(capsys, "replay", fan_out)
    assert code == 1 and "not replayed: no workflow of type 'FanOut' was given" in out
    assert out.splitlines()[-1] == (
        "0 histories replayed against this code: all replay; 1 not replayed (their "
        "workflows were not given)"
    )
    given = ratchet(
        capsys, "replay", fan_out, "--workflows", "ratchet.examples.orchestration:FanOut"
    )
    assert given[0] == 0, given
    code, _, err = ratchet(capsys, "replay", str(HISTORIES / "nope.json"))
    assert code == 1 and "no such file" in err
    code, _, err = ratchet(capsys, "replay", str(HISTORIES / "release-0.1.0" / "README.md"))
    assert code == 1 and "is not a Temporal history in JSON" in err


def test_a_versioned_worker_needs_both_its_deployment_and_its_build(
    capsys: pytest.CaptureFixture[str],
):
    agents = ("worker", "--agents", "ratchet.examples:AGENTS")
    code, _, err = ratchet(capsys, *agents, "--deployment", "shop")
    assert code == 2 and "--deployment needs --build-id too" in err
    code, _, err = ratchet(capsys, *agents, "--deployment", "shop", "--build-id", "1.2.3")
    assert code == 2 and "without '.'" in err


def test_a_worker_refuses_deployment_values_and_a_concurrency_temporal_would_refuse(
    capsys: pytest.CaptureFixture[str],
):
    """Temporal never lets such a worker poll and says nothing: refused before connecting."""
    agents = ("worker", "--agents", "ratchet.examples:AGENTS")
    code, _, err = ratchet(capsys, *agents, "--deployment", "shop:eu", "--build-id", "v1")
    assert code == 2 and "deployment='shop:eu' contains ':'" in err
    code, _, err = ratchet(capsys, *agents, "--deployment", "shop", "--build-id", "b" * 256)
    assert code == 2 and "is 256 bytes long, over Temporal's limit of 255" in err
    code, _, err = ratchet(capsys, *agents, "--deployment", "__shop", "--build-id", "v1")
    assert code == 2 and "starts with '__'" in err
    with pytest.raises(SystemExit) as exited:
        main([*agents, "--max-concurrent-turns", "-1"])
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert "--max-concurrent-turns: '-1' is not a whole number of at least 1" in err


async def test_build_worker_refuses_what_temporal_would_refuse(client: AgentClient):
    with pytest.raises(ConfigurationError, match="max_concurrent_turns=0: give how many"):
        build_worker(client, AGENTS, max_concurrent_turns=0)
    config = WorkerDeploymentConfig(
        version=WorkerDeploymentVersion(deployment_name="shop", build_id="x" * 256),
        use_worker_versioning=True,
    )
    with pytest.raises(ConfigurationError, match="over Temporal's limit of 255"):
        build_worker(client, AGENTS, deployment_config=config)


async def test_promote_refused_for_a_workflow_it_was_not_given_names_the_workflows_flag(
    temporal_server: DevServer,
    client: AgentClient,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv("TEMPORAL_ADDRESS", temporal_server.address)
    queue = f"promote-{uuid.uuid4().hex[:8]}"
    # A user's workflow, open and unpinned (no worker took it): the new build would take it.
    started = await client.temporal.start_workflow(
        "UsersOwnWorkflow", id=f"own-{queue}", task_queue=queue
    )
    visible = f'WorkflowId="{started.id}" AND ExecutionStatus="Running"'
    for _ in range(300):  # the visibility store lags a moment behind a start: poll it
        if (await client.temporal.count_workflows(visible)).count:
            break
        await asyncio.sleep(0.1)
    promote = ["deploy", "promote", "v2", "--deployment", queue, "--task-queue", queue, "--force"]
    code, out, err = await asyncio.to_thread(ratchet, capsys, *promote)
    await started.terminate()
    assert code == 1 and "no workflow of type 'UsersOwnWorkflow' was given" in out
    assert "pass them with --workflows module:ATTR" in err, err
    assert "workflow.patched" not in err  # before: the only advice, and the wrong one
