"""``ratchet schedules``, ``ratchet replay`` and ``ratchet worker --deployment`` (in
process: ``ratchet deploy`` runs in child processes in
tests/durability/test_versioned_deploy.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from temporalio.client import (
    Client,
    ScheduleActionExecutionStartWorkflow,
    ScheduleDescription,
)
from temporalio.common import WorkerDeploymentVersion
from temporalio.service import RPCError
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
    code, out, _ = ratchet(capsys, "schedules", "trigger", name)
    assert code == 0 and out.startswith(f"schedule {name} fired: started {name}-")
    assert ratchet(capsys, "schedules", "pause", name, "--note", "holidays")[0] == 0
    row = listed(capsys, name)
    assert row.split()[1:8] == ["run", "of", "reporter", "0", "7", "*", "*"]
    assert "paused: holidays" in row
    code, _, err = ratchet(
        capsys, "schedules", "create", name, "x", "--agent", "reporter", "--every", "1h"
    )
    assert code == 1 and "exists already" in err
    assert ratchet(capsys, "schedules", "delete", name)[0] == 0
    for verb in ("pause", "unpause", "trigger", "delete"):
        code, out, err = ratchet(capsys, "schedules", verb, name)
        assert (code, out) == (1, "") and f"there is no schedule {name!r}" in err


@pytest.mark.parametrize("flag", ["--every", "--jitter", "--catchup"])
def test_a_duration_longer_than_temporal_allows_is_refused_naming_its_flag(
    capsys: pytest.CaptureFixture[str], flag: str
):
    when = [] if flag == "--every" else ["--every", "1h"]
    args = ("schedules", "create", "x", "hi", "--agent", "a", *when, flag, "99999999999d")
    with pytest.raises(SystemExit) as exited:  # argparse's usage error
        main(list(args))
    out, err = capsys.readouterr()
    assert (exited.value.code, out) == (2, "")
    assert f"argument {flag}: 99999999999d is longer than Temporal allows" in err
    assert "at most 3652500d" in err


def schedule_of(address: str, schedule_id: str) -> ScheduleDescription:
    async def described() -> ScheduleDescription:
        client = await Client.connect(address)
        return await client.get_schedule_handle(schedule_id).describe()

    return asyncio.run(described())


def terminate_runs(address: str, schedule_id: str) -> None:
    """End the runs a test's schedule started on a queue no worker polls."""

    async def terminate() -> None:
        client = await Client.connect(address)
        described = await client.get_schedule_handle(schedule_id).describe()
        for action in described.info.recent_actions:
            assert isinstance(action.action, ScheduleActionExecutionStartWorkflow)
            with contextlib.suppress(RPCError):
                await client.get_workflow_handle(action.action.workflow_id).terminate()
        await client.get_schedule_handle(schedule_id).delete()

    asyncio.run(terminate())


def test_a_trigger_says_whether_the_schedule_fired_skipped_or_queued_and_takes_an_overlap(
    temporal_server: DevServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("TEMPORAL_ADDRESS", temporal_server.address)
    name = f"nudge-{uuid.uuid4().hex[:8]}"
    code, _, err = ratchet(
        capsys, "schedules", "create", name, "Nudge", "--agent", "nudger",
        "--cron", "0 7 * * *", "--task-queue", name,  # no worker: a firing runs on
    )  # fmt: skip
    assert code == 0, err
    code, out, _ = ratchet(capsys, "schedules", "trigger", name)
    assert code == 0 and out.startswith(f"schedule {name} fired: started {name}-")
    first = out.split("started ")[1].split()[0]
    assert out.endswith("(overlap skip)\n")
    code, out, _ = ratchet(capsys, "schedules", "trigger", name)
    assert code == 0 and out == (
        f"schedule {name} skipped the firing: {first} still runs and its overlap policy is "
        f"skip; to fire anyway: ratchet schedules trigger {name} --overlap allow_all (or "
        "buffer_one, to fire once it ends)\n"
    )
    code, out, _ = ratchet(capsys, "schedules", "trigger", name, "--overlap", "buffer-one")
    assert out == (
        f"schedule {name} queued the firing: {first} still runs (overlap buffer_one); it "
        "starts when that ends\n"
    )
    # A firing is named by its schedule and its second: fire again in a later one.
    fired_at = datetime.strptime(first.removeprefix(f"{name}-"), "%Y-%m-%dT%H:%M:%S%z")
    while datetime.now(UTC) < fired_at + timedelta(seconds=1):
        time.sleep(0.05)
    code, out, _ = ratchet(capsys, "schedules", "trigger", name, "--overlap", "allow_all")
    assert out.startswith(f"schedule {name} fired: started {name}-")
    assert out.endswith("(overlap allow_all)\n")
    info = schedule_of(temporal_server.address, name).info
    assert (info.num_actions, info.num_actions_skipped_overlap) == (2, 1)
    terminate_runs(temporal_server.address, name)


def test_a_backfill_from_the_cli_fires_what_the_schedule_would_have_in_that_span(
    temporal_server: DevServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("TEMPORAL_ADDRESS", temporal_server.address)
    name = f"daily-{uuid.uuid4().hex[:8]}"
    code, _, err = ratchet(
        capsys, "schedules", "create", name, "Report", "--agent", "reporter",
        "--cron", "0 7 * * *", "--task-queue", name,
    )  # fmt: skip
    assert code == 0, err
    code, _, err = ratchet(
        capsys, "schedules", "backfill", name, "--start", "2026-01-10", "--end", "2026-01-01"
    )
    assert code == 1 and "--end (2026-01-01 00:00:00Z) is not after --start" in err
    code, out, err = ratchet(
        capsys, "schedules", "backfill", name, "--start", "2026-01-10T00:00",
        "--end", "2026-01-13T00:00", "--overlap", "allow_all",
    )  # fmt: skip
    assert code == 0, err
    assert out.startswith(
        f"schedule {name} backfilled: the firings it would have made from 2026-01-10 "
        "00:00:00Z to 2026-01-13 00:00:00Z start now (overlap allow_all)"
    )
    info = schedule_of(temporal_server.address, name).info
    scheduled = sorted(a.scheduled_at for a in info.recent_actions)
    assert [f"{t:%m-%d %H:%M}" for t in scheduled] == ["01-10 07:00", "01-11 07:00", "01-12 07:00"]
    terminate_runs(temporal_server.address, name)
    code, _, err = ratchet(capsys, "schedules", "backfill", name, "--start", "2026-01-10")
    assert code == 1 and f"there is no schedule {name!r}" in err


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


@pytest.mark.parametrize("verb", ["create", "pause", "unpause"])
def test_a_note_longer_than_temporal_takes_is_refused_before_it_is_sent(
    capsys: pytest.CaptureFixture[str], verb: str
):
    what = ["hi", "--agent", "a", "--every", "1h"] if verb == "create" else []
    with pytest.raises(SystemExit) as exited:
        main(["schedules", verb, "x", *what, "--note", "n" * 1001])
    _, err = capsys.readouterr()
    assert exited.value.code == 2
    assert "argument --note: the note is 1001 bytes: Temporal takes at most 1000" in err


def test_replay_of_a_history_without_its_start_says_what_the_file_lacks(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
):
    empty = tmp_path / "empty.json"
    empty.write_text('{"events": []}')
    code, out, err = ratchet(capsys, "replay", str(empty))
    assert (code, out) == (1, "")
    assert f"{empty} holds no events: save a whole history with temporal workflow show" in err
    whole = json.loads((HISTORIES / "fan_out.json").read_text())
    fragment = tmp_path / "fragment.json"
    fragment.write_text(json.dumps({"events": whole["events"][2:]}))
    code, out, err = ratchet(capsys, "replay", str(fragment))
    assert (code, out) == (1, "")
    assert f"{fragment} starts at event 3 (WorkflowTaskStarted), not at the run's " in err
    assert "WorkflowExecutionStarted: replay needs the whole history" in err


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
