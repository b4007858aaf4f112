"""Build and run a Ratchet worker.

    python -m ratchet.worker --agents myapp.agents:AGENTS    (or: ratchet worker)

The command itself (its options, loading ``--agents``) is the CLI's ``ratchet worker``;
this package's ``__main__`` hands ``python -m ratchet.worker`` to it.

``AGENTS`` is a dict of agent name to an ``Agent`` or a zero-argument factory. A
worker's caches are sized by passing your own: ``build_worker(...,
thread_cache=ThreadCache(max_bytes=...), state_cache=StateCache(max_entries=...))``, both
from ``ratchet.activities``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.worker import Plugin, Worker, WorkerDeploymentConfig, WorkflowRunner

from ratchet import telemetry
from ratchet.activities import (
    DEFAULT_BATCH_INTERVAL,
    AgentFactory,
    ResourceFactory,
    StateCache,
    ThreadCache,
)
from ratchet.agents import InterceptorFactory
from ratchet.client import DEFAULT_TASK_QUEUE, AgentClient, ensure_search_attributes
from ratchet.errors import ConfigurationError, ServerUnreachableError
from ratchet.plugin import RatchetPlugin, check_agents, passed_through
from ratchet.process import DEFAULT_GRACE_PERIOD, DEFAULT_SERVER_WAIT, hard_exit

from ._routing import routing_note

__all__ = [
    "GRACE_PERIOD",
    "SERVER_WAIT",
    "build_worker",
    "load_agents",
    "load_workflows",
    "serve",
    "versioned",
    "workflow_runner",
]

GRACE_PERIOD = timedelta(seconds=DEFAULT_GRACE_PERIOD)
"""How long a stopping worker lets its turns in flight finish before it cancels them."""
SERVER_WAIT = timedelta(seconds=DEFAULT_SERVER_WAIT)
"""How long a starting worker keeps trying to reach a server that does not answer."""


def build_worker(
    client: Client | AgentClient,
    agents: Mapping[str, AgentFactory],
    *,
    task_queue: str | None = None,
    workflows: list[type] | None = None,
    activities: list[Any] | None = None,
    max_concurrent_turns: int = 50,
    thread_cache: ThreadCache | None = None,
    resources: Mapping[str, ResourceFactory] | None = None,
    state_cache: StateCache | None = None,
    live_events: timedelta | None = DEFAULT_BATCH_INTERVAL,
    graceful_shutdown_timeout: timedelta = GRACE_PERIOD,
    tool_interceptors: Mapping[str, InterceptorFactory] | None = None,
    horizon: timedelta | None = None,
    rate_limited: bool = False,
    **worker_options: Any,
) -> Worker:
    """A worker that hosts ``agents`` and runs ``AgentRun`` (plus ``workflows``).

    Pass your own workflows that call ``run_agent`` in ``workflows`` (and their own
    activities in ``activities``). The worker
    keeps the threads it has seen in ``thread_cache`` (default: 256 MiB).

    ``resources`` maps a name to a factory for a process-bound object (a database
    pool, an HTTP client): each is created once when the worker starts, reached by
    agents as ``context.resources[name]``, and closed (``aclose()`` or
    ``close()``) when the worker shuts down.

    ``live_events`` is how often a turn sends what it emitted (``context.emit``,
    streamed text) to its run's watchers, one signal per batch; ``None`` sends none.

    ``graceful_shutdown_timeout`` is the grace period of a stopping worker (leaving
    ``async with``, ``shutdown()``): it polls no more tasks and gives the turns and
    tools it is running this long to finish; then it cancels them, and each fails as
    ``WorkerShutdown`` and is retried on another worker from its checkpoint (the
    steps it finished are not done again).

    ``tool_interceptors`` maps a name to a factory of a ``ToolInterceptor`` (see
    ``ratchet.agents._interceptors``), which a run names in
    ``RunOptions(tool_interceptor=InterceptorRef(name=..., config=...))``. A plugin in
    ``plugins`` may bring its own (``ratchet.evals.EvalsPlugin`` brings the one
    evaluations rerun with).

    ``horizon`` is how long a session may rely on one of its closed workflow runs
    before it copies what it still needs from it into its open run (re-anchoring,
    docs/sessions.md#retention); default: half the namespace's retention, read from
    Temporal. A session's ``SessionOptions.horizon`` overrides it.

    ``rate_limited``: every turn and tool goes through the server's task queue, never
    eagerly to the worker whose workflow task scheduled it, so the queue's rate limit
    (``ratchet fleet limit``) and fairness keys hold for all of them; an eager turn
    starts about 50 ms sooner on a local server, so it stays the default for a queue
    without a limit. ``max_task_queue_activities_per_second`` (a
    Temporal worker option, passed through) limits the queue from the workers instead:
    the last worker to start sets it; a limit ``ratchet fleet limit`` set overrides it
    (docs/fleet.md).

    ``deployment_config`` (``versioned(deployment, build_id)``) turns on Temporal's
    worker versioning: each run stays on the build that started it and a session
    moves to a new build between messages (docs/deploying.md). Your own workflows
    that declare no ``versioning_behavior`` are pinned too.
    """
    if not agents:
        raise ConfigurationError(
            "build_worker() needs at least one agent: agents={'name': factory}."
        )
    if horizon is not None and horizon <= timedelta(0):
        raise ConfigurationError(
            f"horizon={horizon!r} must be positive, e.g. timedelta(days=15) (or None: half "
            "the namespace's retention)."
        )
    if graceful_shutdown_timeout < timedelta(0):
        raise ConfigurationError(
            f"graceful_shutdown_timeout={graceful_shutdown_timeout!r} is negative; give "
            "the grace period a stopping worker waits for its turns, e.g. timedelta(seconds=20)."
        )
    if not isinstance(client, AgentClient):
        client = AgentClient(client)  # Ratchet's converter on a plain client
    task_queue = task_queue or client.task_queue
    plugin = RatchetPlugin(
        agents,
        task_queue=task_queue,
        max_concurrent_turns=max_concurrent_turns,
        thread_cache=thread_cache,
        resources=resources,
        state_cache=state_cache,
        live_events=live_events,
        tool_interceptors=tool_interceptors,
        horizon=horizon,
    )
    plugins = [*worker_options.pop("plugins", []), plugin]
    if rate_limited:  # an eager turn goes from the workflow's task straight to this
        # worker: the server's rate limit and fairness never see it (docs/fleet.md)
        worker_options.setdefault("disable_eager_activity_execution", True)
    if config := worker_options.get("deployment_config"):
        _check_version(config.version)
        worker_options["deployment_config"] = _pinned_by_default(config)
    return Worker(
        client.temporal,
        task_queue=task_queue,
        workflows=list(workflows or []),
        activities=list(activities or []),
        plugins=plugins,
        graceful_shutdown_timeout=graceful_shutdown_timeout,
        **worker_options,
    )


def versioned(deployment: str, build_id: str) -> WorkerDeploymentConfig:
    """The ``deployment_config`` of a worker that serves ``build_id`` of the worker
    deployment ``deployment`` (``ratchet worker --deployment NAME --build-id ID``)."""
    version = WorkerDeploymentVersion(deployment_name=deployment, build_id=build_id)
    _check_version(version)
    return WorkerDeploymentConfig(
        version=version,
        use_worker_versioning=True,
        default_versioning_behavior=VersioningBehavior.PINNED,
    )


# Temporal Server's own limits (a worker it refuses polls nothing and logs nothing):
# limit.workerBuildIdSize (255 bytes), and each half of the version's internal
# workflow id, (limit.maxIDLength 1000 - 39) // 2 bytes, which also bans ':' in the
# deployment's name. Ratchet bans '.' too: the server's older version strings use it.
_MAX_BYTES = {"deployment": (1000 - 39) // 2, "build_id": 255}
_BANNED = {"deployment": ".:", "build_id": "."}


def _check_version(version: WorkerDeploymentVersion) -> None:
    for name, value in (("deployment", version.deployment_name), ("build_id", version.build_id)):
        banned = [c for c in _BANNED[name] if c in (value or "")]
        size = len((value or "").encode())
        if not value or not value.strip() or banned or value.startswith("__"):
            what = f"contains {banned[0]!r}" if banned else "is empty or starts with '__'"
        elif size > _MAX_BYTES[name]:
            what = f"is {size} bytes long, over Temporal's limit of {_MAX_BYTES[name]}"
        else:
            continue
        shown = value if len(value) <= 60 else value[:57] + "..."
        raise ConfigurationError(
            f"{name}={shown!r} {what}: give a non-empty name without "
            f"{' or '.join(repr(c) for c in _BANNED[name])}, not starting with '__', of at "
            f"most {_MAX_BYTES[name]} bytes, e.g. versioned('support-agents', 'v42') or a "
            "git commit's short hash (ratchet worker --deployment NAME --build-id ID)."
        )


def _pinned_by_default(config: WorkerDeploymentConfig) -> WorkerDeploymentConfig:
    """With versioning on, temporalio refuses a worker whose workflows declare no
    versioning behaviour unless the worker names a default: Ratchet's is pinned."""
    if config.use_worker_versioning and (
        config.default_versioning_behavior == VersioningBehavior.UNSPECIFIED
    ):
        return dataclasses.replace(config, default_versioning_behavior=VersioningBehavior.PINNED)
    return config


def workflow_runner() -> WorkflowRunner:
    """The sandbox Ratchet's workflows run in (and replay tests replay in).

    Ratchet's own modules and the libraries they use are passed through: imported
    once per worker instead of once per workflow instance (about 0.9 MB of memory
    and 60 ms of CPU per cached workflow otherwise). Ratchet's modules keep no
    global mutable state; the replay tests guard their determinism.
    """
    return passed_through(None)


def load_agents(spec: str) -> Mapping[str, AgentFactory]:
    """Import ``module:attribute`` naming a dict of agents (or a function returning one)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ConfigurationError(f"--agents {spec!r} must look like 'package.module:AGENTS'.")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # the project's own modules, as uvicorn and celery do
    try:
        value = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as e:
        raise ConfigurationError(f"Cannot load agents from {spec!r}: {e}") from e
    agents = value() if callable(value) else value
    if not isinstance(agents, Mapping) or not agents:
        raise ConfigurationError(f"{spec!r} must be a non-empty dict of name -> agent or factory.")
    check_agents(agents)
    return agents


def load_workflows(spec: str) -> list[type]:
    """Import ``module:attribute`` naming a list of workflow classes (or one)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ConfigurationError(f"--workflows {spec!r} must look like 'package.module:WORKFLOWS'.")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        value = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as e:
        raise ConfigurationError(f"Cannot load workflows from {spec!r}: {e}") from e
    # A string is refused whole below, not iterated character by character.
    found: list[Any] = [value] if isinstance(value, type | str | bytes) else list(value)
    not_workflows = [w for w in found if not hasattr(w, "__temporal_workflow_definition")]
    if not found or not_workflows:
        raise ConfigurationError(
            f"{spec!r} must be a workflow class or a list of them (each with @workflow.defn)"
            + (f"; not one: {not_workflows[0]!r}" if not_workflows else "")
        )
    return found


_PASSING = ("refused", "dns error", "timed out", "timeout", "reset", "unavailable")
"""Reasons a server may stop giving by itself (not yet listening, not yet in DNS, busy):
worth trying again. A TLS or credentials mismatch is not."""


async def _connect_when_up(wait: timedelta, *args: Any, **kwargs: Any) -> AgentClient:
    """``AgentClient.connect``, tried again with backoff for ``wait`` while no server
    answers for a reason that may pass (``_PASSING``); says once that it waits."""
    deadline = time.monotonic() + wait.total_seconds()
    delay = 0.2
    said = False
    while True:
        try:
            return await AgentClient.connect(*args, **kwargs)
        except ServerUnreachableError as e:
            left = deadline - time.monotonic()
            if left <= 0 or not any(word in e.reason.lower() for word in _PASSING):
                raise
            if not said:
                print(
                    f"no Temporal server answers at {e.address} yet ({e.reason}); "
                    f"trying again for {wait.total_seconds():g} s",
                    flush=True,
                )
                said = True
            await asyncio.sleep(min(delay, left))
            delay = min(delay * 2, 2.0)


async def serve(
    agents: Mapping[str, AgentFactory],
    *,
    target: str | None = None,
    namespace: str | None = None,
    task_queue: str = DEFAULT_TASK_QUEUE,
    max_concurrent_turns: int = 50,
    rate_limited: bool = False,
    graceful_shutdown_timeout: timedelta = GRACE_PERIOD,
    ready_line: bool = True,
    metrics_address: str | None = None,
    plugins: Sequence[Plugin] = (),
    deployment: WorkerDeploymentConfig | None = None,
    workflows: Sequence[type] = (),
    server_wait: timedelta = SERVER_WAIT,
) -> None:
    """Run a worker until SIGTERM or SIGINT, then drain it and return. ``plugins``
    are the worker's besides Ratchet's (``ratchet worker`` adds ``EvalsPlugin``).

    Draining: the worker polls no more tasks (the server hands its runs to other
    workers at once) and gives the turns it is running ``graceful_shutdown_timeout``
    (``ratchet worker --grace-period``) to finish; then it cancels those still
    running, each of which is retried on another worker from its checkpoint. A
    second signal while draining exits at once, with code 128 + the signal's number:
    the turns in flight are retried elsewhere once their heartbeats time out, as
    after a crash.

    Traces go to ``OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT`` when it is set; Prometheus
    metrics are served on ``metrics_address`` (or ``RATCHET_METRICS_ADDRESS``) when given.
    ``deployment`` (``versioned(...)``) serves one build of a worker deployment;
    ``workflows`` are your own, run beside Ratchet's. When no server answers yet,
    the worker tries again for ``server_wait``, then raises ``ServerUnreachableError``.
    """
    runtime = telemetry.worker_runtime(telemetry.metrics_address(metrics_address))
    client = await _connect_when_up(
        server_wait, target, namespace=namespace, task_queue=task_queue, runtime=runtime
    )
    # Runs upsert Ratchet's search attributes: a namespace without them would fail
    # every workflow task, so register them now or refuse to start, saying how.
    added = await ensure_search_attributes(client.temporal)
    if added:
        print(f"registered search attributes: {', '.join(added)}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        if stop.is_set():
            print(
                "worker stopping at once (second signal): turns in flight are retried on "
                "another worker when their heartbeats time out",
                flush=True,
            )
            hard_exit(128 + signum)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, sig)
    versioning: dict[str, Any] = {"deployment_config": deployment} if deployment else {}
    worker = build_worker(
        client,
        agents,
        task_queue=task_queue,
        max_concurrent_turns=max_concurrent_turns,
        rate_limited=rate_limited,
        graceful_shutdown_timeout=graceful_shutdown_timeout,
        plugins=list(plugins),
        workflows=list(workflows),
        **versioning,
    )
    try:
        async with worker:
            if ready_line:
                names = ", ".join(sorted(agents))
                build, note = "", ""
                if deployment:
                    version = deployment.version
                    build = f", build {version.build_id!r} of {version.deployment_name!r}"
                    note = await routing_note(client.temporal, version, task_queue)
                    note = f"; {note}" if note else ""
                print(
                    f"worker ready: task queue {task_queue!r}{build}, agents: {names}{note}",
                    flush=True,
                )
            await stop.wait()
            if ready_line:
                grace = graceful_shutdown_timeout.total_seconds()
                print(
                    f"worker draining: no new tasks; turns in flight get {grace:g} s to finish "
                    "(signal again to stop at once)",
                    flush=True,
                )
        if ready_line:
            print("worker stopped", flush=True)
    finally:
        await asyncio.to_thread(telemetry.flush_tracing)  # spans still in the batch
