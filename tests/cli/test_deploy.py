"""The deployment files (docker-compose.yml, Dockerfile, .dockerignore) and ``ratchet setup``.

No Docker engine is needed: the compose file and Dockerfile are checked statically,
the Dockerfile's install step is replayed with pip, and ``ratchet setup`` runs
against real dev servers.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from ratchet.devserver import DevServer
from ratchet.wire._search_attributes import SEARCH_ATTRIBUTES, cli_commands

from ..conftest import ROOT

COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
RATCHET_SCRIPT = Path(sys.executable).parent / "ratchet"
# What each indexed type is called by `temporal operator search-attribute create`.
CLI_TYPE = {"KEYWORD": "Keyword", "INT": "Int", "DOUBLE": "Double"}
# An explicit version: major.minor at least, optionally a variant (16.9-bookworm).
VERSION_TAG = re.compile(r"^v?\d+\.\d+(\.\d+)?(-[a-z0-9.]+)?$")


def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE_FILE.read_text())


def services() -> dict[str, dict[str, Any]]:
    return compose()["services"]


def dependencies(service: dict[str, Any]) -> dict[str, dict[str, str]]:
    return service.get("depends_on") or {}


def one_shot_services() -> set[str]:
    """Services others wait for with ``service_completed_successfully``."""
    return {
        name
        for service in services().values()
        for name, dep in dependencies(service).items()
        if dep.get("condition") == "service_completed_successfully"
    }


def long_running_services() -> list[str]:
    return sorted(set(services()) - one_shot_services())


def interpolate(text: str) -> str:
    """Compose's ``${VAR:-default}`` with the variable unset; ``$$`` is a literal ``$``."""
    text = re.sub(r"\$\{[A-Z0-9_]+:-([^}]*)\}", r"\1", text)
    return text.replace("$$", "$")


def command_of(name: str) -> list[str]:
    command = services()[name]["command"]
    words = shlex.split(command) if isinstance(command, str) else list(command)
    return [interpolate(word) for word in words]


def script_of(name: str) -> str:
    """The shell script a one-shot service runs (``entrypoint: [sh, -euc]``)."""
    service = services()[name]
    assert service["entrypoint"][:2] == ["/bin/sh", "-euc"], service["entrypoint"]
    (script,) = service["command"]
    return interpolate(script)


def option_names(words: list[str]) -> list[str]:
    return [word for word in words if word.startswith("--")]


# -- docker-compose.yml ----------------------------------------------------------------


def test_compose_file_runs_the_whole_stack():
    assert set(services()) == {
        "postgresql",
        "temporal-schema",
        "temporal",
        "temporal-init",
        "temporal-ui",
        "codec-server",
        "ratchet-worker",
    }
    assert one_shot_services() == {"temporal-schema", "temporal-init"}
    assert "postgresql-data" in compose()["volumes"]
    assert "postgresql-data:/var/lib/postgresql/data" in services()["postgresql"]["volumes"]


def test_every_pulled_image_is_pinned_to_an_explicit_version():
    for name, service in services().items():
        if "build" in service:
            continue  # built here; its `image` only names the result
        image = service["image"]
        repository, sep, tag = image.rpartition(":")
        assert sep and repository and "/" not in tag, f"{name}: {image!r} has no tag"
        assert tag != "latest" and VERSION_TAG.match(tag), f"{name}: {image!r} is not pinned"


def test_every_long_running_service_has_a_healthcheck_and_restarts():
    for name in long_running_services():
        service = services()[name]
        check = service.get("healthcheck") or {}
        assert check.get("test") and not check.get("disable"), f"{name} has no healthcheck"
        assert service.get("restart") == "unless-stopped", name


def test_one_shot_services_are_not_restarted_for_ever():
    for name in one_shot_services():
        assert services()[name].get("restart") in (None, "no"), name


def test_depends_on_names_existing_services_with_a_meaningful_condition():
    for name, service in services().items():
        for target, dep in dependencies(service).items():
            assert target in services(), f"{name} depends on unknown {target!r}"
            condition = dep.get("condition")
            if condition == "service_healthy":
                assert "healthcheck" in services()[target], f"{name} waits on {target}"
            else:
                assert condition == "service_completed_successfully", (name, target, dep)
                assert target in one_shot_services()


def test_the_stack_starts_in_dependency_order():
    def waits_for(name: str) -> set[str]:
        direct = set(dependencies(services()[name]))
        return direct.union(*(waits_for(d) for d in direct))

    assert waits_for("ratchet-worker") >= {"temporal-init", "temporal", "temporal-schema"}
    assert "postgresql" in waits_for("temporal")
    assert "temporal" in waits_for("temporal-ui")


def test_worker_and_codec_server_build_from_the_repo_dockerfile():
    for name in ("ratchet-worker", "codec-server"):
        build = services()[name]["build"]
        context = build if isinstance(build, str) else build.get("context", ".")
        dockerfile = "Dockerfile" if isinstance(build, str) else build.get("dockerfile")
        assert (ROOT / context).resolve() == ROOT, name
        assert (ROOT / context / (dockerfile or "Dockerfile")).resolve() == DOCKERFILE


@pytest.mark.parametrize("service", ["ratchet-worker", "codec-server"])
@pytest.mark.slow  # a child process
def test_compose_commands_exist_in_the_ratchet_cli(service: str):
    command = command_of(service)
    assert command[0] == "ratchet"
    subcommand = command[1]
    shown = subprocess.run(
        [str(RATCHET_SCRIPT), subcommand, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert shown.returncode == 0, f"`ratchet {subcommand}` does not exist:\n{shown.stderr}"
    for option in option_names(command[2:]):
        assert option in shown.stdout, f"`ratchet {subcommand}` has no {option}"


def compose_seconds(duration: str) -> float:
    """A compose duration (``30s``, ``1m30s``) in seconds."""
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", duration)
    assert "".join(n + u for n, u in parts) == duration, f"unreadable duration {duration!r}"
    return sum(float(n) * units[u] for n, u in parts)


def test_compose_lets_the_worker_drain_before_killing_it():
    from ratchet.cli._worker import DEFAULT_GRACE_PERIOD

    command = command_of("ratchet-worker")
    grace = DEFAULT_GRACE_PERIOD
    if "--grace-period" in command:
        grace = float(command[command.index("--grace-period") + 1])
    # The worker's grace period, then time to cancel what still runs, report it, close
    # resources and flush traces (up to 5 s) before Docker's SIGKILL.
    assert compose_seconds(services()["ratchet-worker"]["stop_grace_period"]) >= grace + 10


def test_worker_command_loads_its_default_agents():
    from ratchet.worker import load_agents

    command = command_of("ratchet-worker")
    assert load_agents(command[command.index("--agents") + 1])


def test_the_web_ui_decodes_through_the_codec_server():
    codec = command_of("codec-server")
    port = codec[codec.index("--port") + 1]
    ui_origin = codec[codec.index("--ui-origin") + 1]
    ui = services()["temporal-ui"]
    env = ui["environment"]
    assert env["TEMPORAL_CODEC_ENDPOINT"] == f"http://localhost:{port}"
    assert ui_origin in env["TEMPORAL_CORS_ORIGINS"].split(",")
    assert f"127.0.0.1:{port}:{port}" in services()["codec-server"]["ports"]
    ui_port = ui_origin.rsplit(":", 1)[1]
    assert f"127.0.0.1:{ui_port}:{env['TEMPORAL_UI_PORT']}" in ui["ports"]


def test_worker_and_codec_server_share_the_encryption_keys_from_the_environment():
    worker = services()["ratchet-worker"]["environment"]
    codec = services()["codec-server"]["environment"]
    assert worker["RATCHET_ENCRYPTION_KEYS"] == codec["RATCHET_ENCRYPTION_KEYS"]
    assert worker["RATCHET_ENCRYPTION_KEYS"].startswith("${RATCHET_ENCRYPTION_KEYS:?")
    assert codec["RATCHET_CODEC_TOKEN"].startswith("${RATCHET_CODEC_TOKEN:?")
    assert worker["TEMPORAL_ADDRESS"] == "temporal:7233"
    assert "OPENAI_API_KEY" in worker and worker["OPENAI_API_KEY"] is None  # passed through


def test_no_secret_is_written_into_the_compose_file():
    secret = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PWD")
    for name, service in services().items():
        for var, value in (service.get("environment") or {}).items():
            if secret.search(var) and value is not None:
                assert str(value).startswith("${"), f"{name}: {var} is written in the file"


def test_bind_mounts_exist():
    for name, service in services().items():
        for volume in service.get("volumes") or []:
            source = volume.split(":", 1)[0]
            if source.startswith("./"):
                assert (ROOT / source).is_file(), f"{name}: {source} does not exist"


def test_compose_registers_exactly_ratchets_search_attributes():
    script = script_of("temporal-init")
    registered = [
        line.strip().removeprefix("retry ")
        for line in script.splitlines()
        if "search-attribute create" in line
    ]
    assert registered == cli_commands("default")
    pairs = [re.search(r"--name (\S+) --type (\S+)", line).groups() for line in registered]
    expected = [
        (key.name, CLI_TYPE[key.indexed_value_type.name.removeprefix("INDEXED_VALUE_TYPE_")])
        for key in SEARCH_ATTRIBUTES
    ]
    assert pairs == expected
    # The server image creates no namespace: the script must, before registering.
    assert script.index("namespace create --namespace default") < script.index(registered[0])


@pytest.mark.slow
async def test_init_script_registers_the_attributes_on_a_bare_server_twice(tmp_path: Path):
    """The one-shot service's script, run with the venv's `temporal` CLI in place of
    admin-tools' own; a second run (the next `docker compose up`) must succeed too."""
    server = await asyncio.to_thread(
        DevServer.start, ui=False, log_dir=tmp_path, search_attributes=False
    )
    env = {
        **os.environ,
        "TEMPORAL_ADDRESS": server.address,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    try:
        runs = [
            await asyncio.to_thread(
                subprocess.run,
                ["/bin/sh", "-euc", script_of("temporal-init")],
                env=env,
                capture_output=True,
                text=True,
                timeout=170,
            )
            for _ in range(2)
        ]
    finally:
        await asyncio.to_thread(server.stop)
    for run in runs:
        assert run.returncode == 0, run.stdout + run.stderr
    listed = runs[-1].stdout
    for key in SEARCH_ATTRIBUTES:
        kind = CLI_TYPE[key.indexed_value_type.name.removeprefix("INDEXED_VALUE_TYPE_")]
        assert re.search(rf"^\s*{key.name}\s+{kind}\s*$", listed, re.M), listed


def test_schema_setup_covers_both_databases():
    script = script_of("temporal-schema")
    for db, kind in (("temporal", "temporal"), ("temporal_visibility", "visibility")):
        assert f"--db {db} create" in script
        assert f"--db {db} setup-schema -v 0.0" in script
        assert f"--db {db} update-schema -d $schema/{kind}/versioned" in script
    assert "/etc/temporal/schema/postgresql/v12" in script


@pytest.mark.slow  # a child process
def test_docker_compose_config_validates():
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("no docker CLI on this machine")
    version = subprocess.run(
        [docker, "compose", "version"], capture_output=True, text=True, timeout=60
    )
    if version.returncode != 0:
        pytest.skip(f"the docker CLI has no compose plugin: {version.stderr.strip()[:120]}")
    env = {
        **os.environ,
        "RATCHET_ENCRYPTION_KEYS": "k1:" + "A" * 43 + "=",
        "RATCHET_CODEC_TOKEN": "test-token",
    }
    checked = subprocess.run(
        [docker, "compose", "-f", str(COMPOSE_FILE), "config", "--quiet"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert checked.returncode == 0, checked.stderr


# -- Dockerfile ------------------------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    pairs = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            pairs.append((keyword.upper(), rest.strip()))
    return pairs


def dockerignore_patterns() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def copied_sources() -> list[str]:
    sources = []
    for keyword, rest in dockerfile_instructions():
        if keyword == "COPY" and not rest.startswith("--from"):
            *srcs, _dest = rest.split()
            sources += srcs
    return sources


def test_dockerfile_base_images_are_pinned():
    stages: set[str] = set()
    for keyword, rest in dockerfile_instructions():
        if keyword != "FROM":
            continue
        image, *alias = rest.split()
        if image in stages:
            continue
        repository, sep, tag = image.partition(":")
        assert sep and tag != "latest", f"{image!r} is not pinned"
        assert re.match(r"^\d+\.\d+\.\d+-", tag), f"{image!r} has no exact version"
        if alias:
            stages.add(alias[-1])


def test_dockerfile_runs_the_worker_as_a_non_root_user():
    instructions = dockerfile_instructions()
    users = [rest for keyword, rest in instructions if keyword == "USER"]
    assert users and users[-1] not in ("root", "0"), users
    commands = [rest for keyword, rest in instructions if keyword == "CMD"]
    assert commands[-1] == '["ratchet", "worker"]'
    installs = [rest for keyword, rest in instructions if keyword == "RUN" and "pip" in rest]
    assert not any("-e " in rest or "[dev]" in rest for rest in installs), installs


def test_dockerfile_copies_paths_that_exist_and_are_not_ignored():
    patterns = dockerignore_patterns()
    for source in copied_sources():
        assert (ROOT / source).exists(), f"COPY {source}: no such path"
        ignored = [p for p in patterns if fnmatch.fnmatch(source.rstrip("/"), p)]
        assert not ignored, f"COPY {source} is excluded by .dockerignore {ignored}"


def test_dockerignore_keeps_local_environments_and_secrets_out():
    patterns = dockerignore_patterns()
    for needed in (".git", ".venv", "tests", ".env", "**/__pycache__"):
        assert needed in patterns, needed


@pytest.mark.slow
def test_dockerfile_install_step_builds_a_wheel_declaring_the_ratchet_script(tmp_path: Path):
    """Replays the build stage's `pip wheel --no-deps .` on exactly what it copies."""
    context = tmp_path / "context"
    context.mkdir()
    for source in copied_sources():
        path = ROOT / source
        if path.is_dir():
            shutil.copytree(path, context / source, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, context / source)
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-cache-dir",
            "--no-deps",
            "--wheel-dir",
            str(tmp_path / "wheels"),
            str(context),
        ],
        capture_output=True,
        text=True,
        timeout=170,
    )
    if "No matching distribution found for setuptools" in built.stderr:
        pytest.skip("pip cannot fetch the build backend (setuptools) from any index here")
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (tmp_path / "wheels").glob("ratchet-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        scripts = archive.read(entry_points).decode()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
    assert re.search(r"^ratchet = ratchet\.cli:entry$", scripts, re.M), scripts
    assert "ratchet/cli/__init__.py" in names and "ratchet/wire/_search_attributes.py" in names
    assert not [n for n in names if n.startswith("tests/")]
    for line in metadata.decode().splitlines():
        if line.startswith("Requires-Dist:") and "pytest" in line:
            assert 'extra == "dev"' in line, line  # dev tools stay out of the image


# -- ratchet setup ---------------------------------------------------------------------


def ratchet_setup(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPORAL_")}
    return subprocess.run(
        [str(RATCHET_SCRIPT), "setup", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
    )


async def test_setup_reports_all_present_on_the_dev_server(temporal_server: DevServer):
    done = await asyncio.to_thread(ratchet_setup, "--address", temporal_server.address)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"all {len(SEARCH_ATTRIBUTES)} search attributes are already registered on "
        "namespace 'default'; nothing to do."
    )


@pytest.mark.slow
async def test_setup_registers_missing_attributes_once(tmp_path: Path):
    server = await asyncio.to_thread(
        DevServer.start, ui=False, log_dir=tmp_path, search_attributes=False
    )
    try:
        first = await asyncio.to_thread(ratchet_setup, "--address", server.address)
        second = await asyncio.to_thread(ratchet_setup, "--address", server.address)
        listed = await asyncio.to_thread(
            subprocess.run,
            [
                str(Path(sys.executable).parent / "temporal"),
                "operator",
                "search-attribute",
                "list",
                "--address",
                server.address,
                "-o",
                "json",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        await asyncio.to_thread(server.stop)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    count = len(SEARCH_ATTRIBUTES)
    assert lines[0] == f"registered {count} search attribute(s) on namespace 'default':"
    assert [line.split()[0] for line in lines[1:]] == [key.name for key in SEARCH_ATTRIBUTES]
    assert second.returncode == 0, second.stderr
    assert "nothing to do" in second.stdout
    for key in SEARCH_ATTRIBUTES:
        kind = key.indexed_value_type.name.removeprefix("INDEXED_VALUE_TYPE_")
        assert re.search(rf'"{key.name}":\s*"INDEXED_VALUE_TYPE_{kind}"', listed.stdout), (
            key.name,
            listed.stdout,
        )


async def test_setup_prints_a_refusal_as_an_error_without_a_traceback(
    temporal_server: DevServer,
):
    done = await asyncio.to_thread(
        ratchet_setup, "--address", temporal_server.address, "--namespace", "no-such-namespace"
    )
    assert done.returncode == 1
    assert done.stderr.startswith(
        "error: Cannot register Ratchet's search attributes on namespace 'no-such-namespace'"
    )
    assert "temporal operator search-attribute create --namespace no-such-namespace" in done.stderr
    assert "Traceback" not in done.stderr
