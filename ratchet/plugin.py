"""Ratchet as temporalio plugins, for adding it to a Temporal app you already have.

    client = await Client.connect("localhost:7233", plugins=[RatchetClientPlugin()])
    worker = Worker(
        client,
        task_queue="my-app",
        workflows=[MyWorkflow],           # your own, next to Ratchet's
        activities=[my_activity],
        plugins=[RatchetPlugin(agents={"support": support_agent})],
    )

Two parts, because a plugin on a ``Client`` applies to every ``Worker`` built from
it, while only the workers that host agents need them:

- ``RatchetClientPlugin``: Ratchet's data converter (pydantic JSON), a payload
  codec (encryption), external payload storage and tracing. Every client and
  worker of a namespace needs the same converter, codec and storage.
- ``RatchetPlugin``: Ratchet's workflows and the activities that host ``agents``,
  the sandbox pass-through of Ratchet's modules (applied to whatever workflow
  runner the worker has, and to a ``Replayer``), the worker options Ratchet's
  durability relies on, and the lifespan of worker resources.

``AgentClient.connect`` and ``build_worker`` are these two plugins and the
options they take.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from temporalio.converter import DataConverter, ExternalStorage, PayloadCodec, StorageDriver
from temporalio.plugin import SimplePlugin
from temporalio.worker import WorkerConfig, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from ratchet.activities import (
    DEFAULT_BATCH_INTERVAL,
    AgentFactory,
    AnchorCopies,
    ResourceFactory,
    StateCache,
    ThreadCache,
    TurnActivities,
    WorkerResources,
    deliver_scheduled_message,
)
from ratchet.agents import Agent, InterceptorFactory
from ratchet.errors import PAYLOAD_LIMIT, ConfigurationError
from ratchet.payloads import (
    RatchetPayloadConverter,
    data_converter,
    external_storage,
    with_codec,
)
from ratchet.workflows import (
    AgentRun,
    AgentRunWorkflow,
    AgentSessionWorkflow,
    ScheduledSendWorkflow,
)

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = [
    "OffersToolInterceptors",
    "RatchetClientPlugin",
    "RatchetPlugin",
    "ratchet_converter",
    "replayer_plugins",
]

PASSED_THROUGH = ("ratchet", "pydantic", "openai", "opentelemetry")
"""Modules workflows share with the worker instead of re-importing per instance."""
WORKFLOWS: tuple[type, ...] = (
    AgentRun,
    AgentRunWorkflow,
    AgentSessionWorkflow,
    ScheduledSendWorkflow,
)


@runtime_checkable
class OffersToolInterceptors(Protocol):
    """A plugin that brings tool interceptors along (``ratchet.evals.EvalsPlugin``
    does): ``RatchetPlugin`` adds them to its worker's, which a run names in
    ``RunOptions(tool_interceptor=...)``."""

    tool_interceptors: Mapping[str, InterceptorFactory]


STICKY_TIMEOUT = timedelta(seconds=3)
"""A run whose worker died moves to another worker within this (SDK default: 10 s)."""
SDK_STICKY_TIMEOUT = timedelta(seconds=10)


def ratchet_converter(
    existing: DataConverter | None,
    *,
    payload_storage: ExternalStorage | StorageDriver | str | Path | None = None,
    codec: PayloadCodec | None = None,
) -> DataConverter:
    """Ratchet's payload converter, keeping the codec, failure converter and storage
    ``existing`` had; ``payload_storage`` and ``codec`` (or RATCHET_ENCRYPTION_KEYS)
    are added."""
    converter = data_converter
    if existing is not None and existing.payload_converter_class is not RatchetPayloadConverter:
        converter = dataclasses.replace(
            data_converter,
            external_storage=existing.external_storage,
            payload_codec=existing.payload_codec,
            failure_converter_class=existing.failure_converter_class,
        )
    elif existing is not None:
        converter = existing
    if payload_storage is not None:
        converter = dataclasses.replace(
            converter, external_storage=external_storage(payload_storage)
        )
    return with_codec(converter, codec if codec is not None else converter.payload_codec)


def passed_through(runner: WorkflowRunner | None) -> WorkflowRunner:
    """``runner`` with Ratchet's modules passed through its sandbox (the default
    sandbox when there is none; an unsandboxed runner as it is)."""
    if runner is None:
        return SandboxedWorkflowRunner(
            restrictions=SandboxRestrictions.default.with_passthrough_modules(*PASSED_THROUGH)
        )
    if isinstance(runner, SandboxedWorkflowRunner):
        restrictions = runner.restrictions.with_passthrough_modules(*PASSED_THROUGH)
        return dataclasses.replace(runner, restrictions=restrictions)
    return runner


def check_agents(agents: Mapping[str, AgentFactory]) -> None:
    """Refuse, before the worker starts, an entry that can never become an agent: each
    is an ``Agent``, or a factory (a function or class) called with no arguments
    when a run first needs it. What a factory builds is checked then."""
    if not isinstance(agents, Mapping) or not agents:
        raise ConfigurationError(
            f"A worker needs at least one agent, in a dict of name -> Agent or factory; "
            f"got {agents!r:.60}. E.g. agents={{'support': make_support_agent}}."
        )
    for name, factory in agents.items():
        if not isinstance(name, str) or not name:
            raise ConfigurationError(f"Agent names are non-empty strings; got {name!r}.")
        if isinstance(factory, Agent):
            continue
        if not callable(factory):
            raise ConfigurationError(
                f"Agent {name!r} is {factory!r:.60}, a {type(factory).__name__}: give an "
                "Agent, or a function (or class) that builds one with no arguments."
            )
        try:
            inspect.signature(factory).bind()
        except TypeError:
            label = getattr(factory, "__qualname__", repr(factory))
            needed = ", ".join(_required(factory))
            raise ConfigurationError(
                f"Agent {name!r}: its factory {label} needs arguments ({needed}), but a "
                f"factory is called with none: give them defaults, or wrap it "
                f"(lambda: {label}(...))."
            ) from None
        except ValueError:
            pass  # no signature to read (a builtin): it is called as it is


def _required(factory: object) -> list[str]:
    parameters = inspect.signature(factory).parameters.values()  # type: ignore[arg-type]
    return [p.name for p in parameters if p.default is p.empty and p.kind not in _VARIADIC]


_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


class RatchetClientPlugin(SimplePlugin):
    """The client part: converter, codec, external payload storage, tracing."""

    def __init__(
        self,
        *,
        payload_storage: ExternalStorage | StorageDriver | str | Path | None = None,
        codec: PayloadCodec | None = None,
        tracing: bool | TracerProvider | None = None,
    ) -> None:
        from ratchet.telemetry import client_interceptors  # OpenTelemetry stays out of the sandbox

        super().__init__(
            "ratchet.client",
            data_converter=lambda existing: ratchet_converter(
                existing, payload_storage=payload_storage, codec=codec
            ),
            interceptors=client_interceptors(tracing) or None,
        )


class RatchetPlugin(SimplePlugin):
    """The worker part: Ratchet's workflows, and the activities hosting ``agents``.

    The worker's client must use Ratchet's converter: connect it with
    ``RatchetClientPlugin`` (or ``AgentClient.connect``). ``agents`` maps a name to
    an ``Agent`` or a zero-argument factory; the other arguments are
    ``build_worker``'s.
    """

    def __init__(
        self,
        agents: Mapping[str, AgentFactory],
        *,
        task_queue: str | None = None,
        max_concurrent_turns: int | None = None,
        thread_cache: ThreadCache | None = None,
        resources: Mapping[str, ResourceFactory] | None = None,
        state_cache: StateCache | None = None,
        live_events: timedelta | None = DEFAULT_BATCH_INTERVAL,
        tool_interceptors: Mapping[str, InterceptorFactory] | None = None,
        horizon: timedelta | None = None,
    ) -> None:
        check_agents(agents)
        if max_concurrent_turns is not None and max_concurrent_turns < 1:
            raise ConfigurationError(
                f"max_concurrent_turns={max_concurrent_turns!r}: give how many turns and "
                "tools a worker runs at once, at least 1, e.g. 50 "
                "(ratchet worker --max-concurrent-turns)."
            )
        self._anchoring = AnchorCopies(horizon)
        self.agents = agents
        self.max_concurrent_turns = max_concurrent_turns
        self._task_queue = task_queue
        self._resources = WorkerResources(resources)
        self._caches = (thread_cache, state_cache)
        self._live_events = live_events
        self._interceptors = dict(tool_interceptors or {})
        self._hosts: list[TurnActivities] = []
        super().__init__(
            "ratchet",
            workflows=list(WORKFLOWS),
            workflow_runner=passed_through,
            run_context=self._lifespan,
        )

    @asynccontextmanager
    async def _lifespan(self) -> AsyncIterator[None]:
        """Worker resources while the worker runs; then what its agents hold open
        (MCP servers) is closed too."""
        try:
            async with self._resources.lifespan():
                yield
        finally:
            for host in self._hosts:
                await host.close_agents()

    def configure_worker(self, config: WorkerConfig) -> WorkerConfig:
        client = config.get("client")
        converter = client.data_converter if client is not None else None
        if converter is None or converter.payload_converter_class is not RatchetPayloadConverter:
            raise ConfigurationError(
                "RatchetPlugin needs a client with Ratchet's data converter: connect with "
                "Client.connect(..., plugins=[RatchetClientPlugin()]) or AgentClient.connect()."
            )
        config = super().configure_worker(config)
        task_queue = self._task_queue or config.get("task_queue") or ""
        thread_cache, state_cache = self._caches
        client_plugins = client.config()["plugins"] if client is not None else []
        plugins = [*client_plugins, *config.get("plugins", ())]
        offered = [p.tool_interceptors for p in plugins if isinstance(p, OffersToolInterceptors)]
        interceptors = {k: v for o in [*offered, self._interceptors] for k, v in o.items()}
        turns = TurnActivities(
            self.agents,
            task_queue=task_queue,
            thread_cache=thread_cache,
            payload_limit=None if converter.external_storage is not None else PAYLOAD_LIMIT,
            resources=self._resources,
            state_cache=state_cache,
            event_batch_interval=self._live_events,
            tool_interceptors=interceptors,
        )
        self._hosts.append(turns)
        config["activities"] = [
            turns.run_turn,
            turns.run_tool,
            deliver_scheduled_message,
            self._anchoring.copy,
            self._anchoring.horizon,
            *config.get("activities", []),
        ]
        if self.max_concurrent_turns is not None:
            config["max_concurrent_activities"] = self.max_concurrent_turns
        if config.get("sticky_queue_schedule_to_start_timeout") == SDK_STICKY_TIMEOUT:
            config["sticky_queue_schedule_to_start_timeout"] = STICKY_TIMEOUT
        return config


def replayer_plugins() -> Sequence[SimplePlugin]:
    """What a ``Replayer`` of Ratchet's workflows needs: ``Replayer(workflows=[],
    plugins=replayer_plugins())`` (plus your own workflows, if any)."""
    return [
        RatchetClientPlugin(tracing=False),
        SimplePlugin("ratchet.replay", workflows=list(WORKFLOWS), workflow_runner=passed_through),
    ]
