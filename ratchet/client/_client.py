"""AgentClient: start agent runs and read their results from outside a workflow."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from temporalio.client import (
    Client,
    ScheduleHandle,
    ScheduleOverlapPolicy,
    WorkflowExecutionStatus,
    WorkflowHandle,
)
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.converter import (
    ExternalStorage,
    PayloadCodec,
    StorageDriver,
)
from temporalio.envconfig import ClientConfig
from temporalio.service import RPCError, RPCStatusCode

from ratchet.agents._engine import StateExport
from ratchet.errors import (
    ConfigurationError,
    InvalidInputError,
    ServerUnreachableError,
)
from ratchet.history import Holder, SegmentCache, fetch_range, namespace_retention
from ratchet.payloads import RatchetPayloadConverter
from ratchet.plugin import RatchetClientPlugin, ratchet_converter
from ratchet.types import AgentSession, Gap, Message, ThreadBase, ThreadData, new_id
from ratchet.wire import (
    AGENT_NAME,
    AGENT_OWNER,
    AGENT_STATUS,
    AGENT_TENANT,
    PAGE_BYTES,
    RUN_WORKFLOWS,
    SESSION_WORKFLOW,
    CheckpointAnswer,
    RunInput,
    RunOptions,
    RunResult,
    SessionInput,
    SessionOptions,
    TurnMark,
    indexed_identity,
    new_messages,
)
from ratchet.workflows import AgentRun, AgentSessionWorkflow, run_details

from ._checkpoints import Checkpoint, not_run, read_mark
from ._deletion import DELETE_WAIT, FORKED_FROM, SessionDeletion, delete_session
from ._error_mapping import check_agent_name, check_id, check_prompt_size, translated
from ._listing import WorkflowSummary, describe, kind_of, list_workflows, listing_query
from ._run_handle import RunHandle
from ._schedules import CATCHUP_WINDOW, create_schedule
from ._session_handle import UPDATES_IN_FLIGHT, ResultPoller, SessionHandle

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

DEFAULT_TASK_QUEUE = "ratchet"
"""The task queue an ``AgentClient`` starts on and a worker polls, unless told."""


def run_workflow_id(agent: str) -> str:
    """A readable id: ``run-<agent>-<short id>``."""
    slug = re.sub(r"[^a-z0-9]+", "-", agent.lower()).strip("-") or "agent"
    return f"run-{slug}-{uuid.uuid4().hex[:10]}"


class AgentClient:
    """Talks to Temporal on behalf of agent code. Connect once and reuse."""

    def __init__(
        self, client: Client, *, task_queue: str = DEFAULT_TASK_QUEUE, ui_url: str | None = None
    ) -> None:
        if client.data_converter.payload_converter_class is not RatchetPayloadConverter:
            converter = ratchet_converter(client.data_converter)
            client = Client(**{**client.config(), "data_converter": converter})
        self.temporal = client
        self.task_queue = task_queue
        self.ui_url = ui_url
        self._slots: dict[str, asyncio.Semaphore] = {}
        self._pollers: dict[str, ResultPoller] = {}
        self.segments = SegmentCache()
        """Closed workflow runs' parts of session logs this client has read from their
        histories (a closed run never changes), the most recently used 64 MiB."""

    def _result_poller(self, session_id: str) -> ResultPoller:
        """Polls for this client's queued sends to one session, all in one query."""
        poller = self._pollers.get(session_id)
        if poller is None:
            handle = self.temporal.get_workflow_handle(session_id)
            poller = self._pollers[session_id] = ResultPoller(handle)
        return poller

    def _update_slot(self, session_id: str) -> asyncio.Semaphore:
        """Bounds the Updates this client has in flight to one session."""
        slot = self._slots.get(session_id)
        if slot is None:
            slot = self._slots[session_id] = asyncio.Semaphore(UPDATES_IN_FLIGHT)
        return slot

    @classmethod
    async def connect(
        cls,
        target: str | None = None,
        *,
        namespace: str | None = None,
        task_queue: str = DEFAULT_TASK_QUEUE,
        profile: str | None = None,
        ui_url: str | None = None,
        payload_storage: ExternalStorage | StorageDriver | str | Path | None = None,
        codec: PayloadCodec | None = None,
        tracing: bool | TracerProvider | None = None,
        **connect_options: Any,
    ) -> AgentClient:
        """Connect using ``temporalio.envconfig`` (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
        TLS and API-key settings, config-file profiles); arguments override it.
        Raises ``ServerUnreachableError`` naming the address when no server answers.

        ``payload_storage`` (a directory, a driver, or an ``ExternalStorage``) keeps
        payloads over 256 KiB out of history, so a turn may carry more than
        Temporal's 2 MB payload limit. Workers built from this client use it too;
        every client and worker of a namespace must share the same storage.

        ``codec`` (e.g. ``ratchet.payloads._encryption.EncryptionCodec``) encodes every payload and
        failure message; without one, ``RATCHET_ENCRYPTION_KEYS`` (when set) turns on
        encryption. Workers built from this client use it too.

        ``tracing`` adds Temporal's OpenTelemetry interceptor (see ``ratchet.telemetry``):
        ``None`` turns it on when ``OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT`` is set, ``True``
        uses the global tracer provider (setting one up if there is none), a
        ``TracerProvider`` uses that one. Workers built from this client trace too.
        """
        config: dict[str, Any] = dict(ClientConfig.load_client_connect_config(profile=profile))
        if target:
            config["target_host"] = target
        if namespace:
            config["namespace"] = namespace
        config.setdefault("target_host", "localhost:7233")
        check_address(config["target_host"])
        config.update(connect_options)
        plugin = RatchetClientPlugin(payload_storage=payload_storage, codec=codec, tracing=tracing)
        config["plugins"] = [plugin, *config.get("plugins", [])]
        try:
            client = await Client.connect(**config)
        except RuntimeError as e:
            if "Failed client connect" not in str(e):
                raise
            # One error a user can act on, not the SDK's chain (its reason is kept).
            raise ServerUnreachableError(config["target_host"], _connect_reason(e)) from None
        return cls(client, task_queue=task_queue, ui_url=ui_url)

    async def start_run(
        self,
        agent: str,
        prompt: str | Sequence[Message],
        *,
        session: AgentSession | None = None,
        options: RunOptions | None = None,
        workflow_id: str | None = None,
        state: StateExport | dict[str, Any] | str | None = None,
        owner: str | None = None,
        tenant: str | None = None,
    ) -> RunHandle:
        """Start a run and return at once. Raises ``InvalidInputError`` for an empty prompt.

        ``state`` (an export from ``RunHandle.export_state()``, or its JSON) starts the
        agent with that state: the entry for this agent's name, or the only one.
        ``owner`` and ``tenant`` index it as theirs (``AgentOwner``, ``AgentTenant``):
        the front door lets only them, and operators, reach it.
        """
        check_agent_name(agent)
        messages = new_messages(prompt, new_id)
        options = options or RunOptions()
        options.check()
        workflow_id = workflow_id or run_workflow_id(agent)
        check_prompt_size(self.temporal, messages, "run", workflow_id)
        if state is not None:
            session = _with_state(agent, session, StateExport.load(state), options)
        with translated("run", workflow_id):
            handle = await self._start(
                AgentRun.run,
                RunInput(agent=agent, messages=messages, session=session, options=options),
                id=workflow_id,
                agent=agent,
                status="RUNNING",
                owned=(owner, tenant),
                static_summary=f"{agent}: {_excerpt(messages)}",
                static_details=run_details(
                    agent, messages, session=session.info.id if session else None, parent=None
                ),
            )
        return RunHandle(handle, self.ui_url, self.temporal.namespace)

    async def _start(
        self,
        run: Any,
        arg: Any,
        *,
        id: str,
        agent: str,
        task_queue: str | None = None,
        status: str = "PENDING",
        owned: tuple[str | None, str | None] = (None, None),
        **options: Any,
    ) -> WorkflowHandle[Any, Any]:
        """Start a run or session indexed from the start with its agent and ``status``,
        so a list shows what it is before a worker has taken it. A single run starts
        RUNNING, so it upserts nothing when a worker takes it (one Temporal action
        fewer); lists show it PENDING until then, from Temporal's own ``BuildIds``
        (``AgentClient.list_sessions``). A namespace without Ratchet's search attributes
        gets them from its first worker; until then the workflow starts unindexed,
        unless it has an ``owned`` (owner, tenant): that refuses, naming ``ratchet setup``."""
        owner, tenant = owned
        pairs = [SearchAttributePair(AGENT_NAME, agent), SearchAttributePair(AGENT_STATUS, status)]
        if owner is not None:
            pairs.append(SearchAttributePair(AGENT_OWNER, indexed_identity(owner)))
        if tenant is not None:
            pairs.append(SearchAttributePair(AGENT_TENANT, indexed_identity(tenant)))
        indexed = TypedSearchAttributes(pairs)
        start = self.temporal.start_workflow
        queue = task_queue or self.task_queue
        try:
            return await start(
                run, arg, id=id, task_queue=queue, search_attributes=indexed, **options
            )
        except RPCError as e:
            if e.status != RPCStatusCode.INVALID_ARGUMENT or "search attribute" not in e.message:
                raise
            if owner is not None or tenant is not None:
                raise ConfigurationError(
                    f"Temporal refused the search attributes that record who owns {id!r} "
                    f"({e.message}). If namespace {self.temporal.namespace!r} lacks "
                    "Ratchet's (AgentOwner...), run `ratchet setup` once on it."
                ) from e
            return await start(run, arg, id=id, task_queue=queue, **options)

    async def run(
        self,
        agent: str,
        prompt: str | Sequence[Message],
        *,
        session: AgentSession | None = None,
        options: RunOptions | None = None,
        workflow_id: str | None = None,
        state: StateExport | dict[str, Any] | str | None = None,
    ) -> RunResult:
        """Run ``agent`` on ``prompt`` to its final answer."""
        handle = await self.start_run(
            agent, prompt, session=session, options=options, workflow_id=workflow_id, state=state
        )
        return await handle.result()

    async def start_session(
        self,
        agent: str,
        *,
        session_id: str | None = None,
        options: SessionOptions | None = None,
        state: StateExport | dict[str, Any] | str | None = None,
        owner: str | None = None,
        tenant: str | None = None,
    ) -> SessionHandle:
        """Start a long-lived session with ``agent``; each ``send`` runs one execution.
        ``owner`` and ``tenant``: as for ``start_run``."""
        check_agent_name(agent)
        options = options or SessionOptions()
        options.check()
        await self._check_horizon(options)
        session = None
        if state is not None:
            session = _with_state(agent, None, StateExport.load(state), options.run)
        workflow_id = session_id or run_workflow_id(agent).replace("run-", "session-", 1)
        if session is not None:
            session = session.model_copy(
                update={"info": session.info.model_copy(update={"id": workflow_id})}
            )
        with translated("session", workflow_id):
            handle = await self._start(
                AgentSessionWorkflow.run,
                SessionInput(agent=agent, session=session, options=options, session_id=workflow_id),
                id=workflow_id,
                agent=agent,
                owned=(owner, tenant),
                static_summary=f"{agent} session",
            )
        return SessionHandle(handle, self)

    async def checkpoint(
        self, source: str, *, at_turn: int | None = None, at_message: str | None = None
    ) -> Checkpoint:
        """The thread and state of session (or run) ``source`` after turn ``at_turn``
        (counted across all its runs, from 1), or after the turn that added message
        ``at_message``; neither: after its last turn. Its workflow runs keep a mark
        per turn: an open run answers by query, a closed one is read from its
        history (no worker needed)."""
        answer, mark = await self._mark(source, at_turn, at_message)
        gaps: list[Gap] = []  # what Temporal deleted reads as placeholders, named
        log, _ = await fetch_range(
            self.temporal,
            Holder(source, answer.run_id, answer.thread_id),
            0,
            mark.length,
            page_bytes=PAGE_BYTES,
            segments=self.segments,
            gaps=gaps,
        )
        seen = ThreadData(messages=log, view=mark.view).visible()
        return Checkpoint(
            gaps=gaps,
            source=source,
            turn=mark.turn,
            agent=mark.agent,
            messages=[*seen, *not_run(mark.open_calls)],
            state=mark.state,
            turns_in_source=answer.turns,
            options=answer.options,
        )

    async def _mark(
        self, source: str, at_turn: int | None, at_message: str | None
    ) -> tuple[CheckpointAnswer, TurnMark]:
        """The mark of a session or run (see ``checkpoint``)."""
        try:
            described = await self.temporal.get_workflow_handle(source).describe()
        except RPCError as e:
            if e.status != RPCStatusCode.NOT_FOUND:
                raise
            raise InvalidInputError(
                f"There is no workflow {source} (or it is past the namespace's "
                "retention); fork a session or run by its id."
            ) from e
        kind = described.workflow_type
        if kind != SESSION_WORKFLOW and kind not in RUN_WORKFLOWS:
            raise InvalidInputError(f"{source} is a {kind}; fork a session or an agent run.")
        running = described.status == WorkflowExecutionStatus.RUNNING
        return await read_mark(
            self.temporal,
            source,
            at_turn=at_turn,
            at_message=at_message,
            closed_run_id=None if running else described.run_id,
        )

    async def schedule(
        self,
        schedule_id: str,
        prompt: str,
        *,
        agent: str | None = None,
        session: str | None = None,
        cron: str | Sequence[str] = (),
        every: timedelta | None = None,
        overlap: ScheduleOverlapPolicy = ScheduleOverlapPolicy.SKIP,
        catchup_window: timedelta = CATCHUP_WINDOW,
        jitter: timedelta | None = None,
        paused: bool = False,
        note: str | None = None,
        options: RunOptions | None = None,
    ) -> ScheduleHandle:
        """Run ``agent`` on ``prompt`` (or send ``prompt`` to the open ``session``) on a
        ``cron`` expression or ``every`` interval, as Temporal Schedule ``schedule_id``.

        ``overlap``: what a firing does while the last one still runs (default SKIP;
        ``BUFFER_ONE``, ``BUFFER_ALL``, ``ALLOW_ALL``...); ``catchup_window``: how late a
        firing missed during an outage may still run (default 5 minutes); ``jitter``:
        a random delay up to this much per firing. The schedule's runs are listed by
        ``schedule_runs_query(schedule_id)``; pause, trigger, backfill or delete it with the
        returned handle (``client.temporal.get_schedule_handle(id)`` later).

        A message to a session is sent once per firing, keyed by its scheduled time;
        if the session has closed, the firing fails and the schedule pauses, its note
        saying why.
        """
        return await create_schedule(
            self,
            schedule_id,
            prompt,
            agent=agent,
            session=session,
            cron=cron,
            every=every,
            overlap=overlap,
            catchup_window=catchup_window,
            jitter=jitter,
            paused=paused,
            note=note,
            options=options,
        )

    async def fork(
        self,
        source: str,
        *,
        at_turn: int | None = None,
        at_message: str | None = None,
        session_id: str | None = None,
        options: SessionOptions | None = None,
        owner: str | None = None,
        tenant: str | None = None,
    ) -> SessionHandle:
        """A new session that starts from ``source``'s checkpoint (see ``checkpoint``).
        It belongs to ``owner`` and ``tenant`` (as for ``start_run``), not the source's.
        The source is only read, and may be closed. ``options`` default to the
        source session's, and the fork runs on the source's task queue (the workers
        that host its agent). A fork copies no messages: its thread names the
        source's log up to the fork point."""
        session_id = session_id or f"{source}-fork-{uuid.uuid4().hex[:6]}"
        answer, mark = await self._mark(source, at_turn, at_message)
        with translated("session", source):
            queue = (await self.temporal.get_workflow_handle(source).describe()).task_queue
        options = options or answer.options or SessionOptions()
        await self._check_horizon(options)
        thread = _fork_thread(source, answer, mark)
        agent, turn, state = mark.agent, mark.turn, mark.state
        session = AgentSession.new(
            agent, datetime.now(UTC), session_id=session_id, thread_kind=options.run.thread_kind
        )
        session = session.model_copy(
            update={
                "thread": thread,
                "state": state,
                "metadata": {"forked_from": source, "at_turn": turn},
            }
        )
        with translated("session", session_id):
            handle = await self._start(
                AgentSessionWorkflow.run,
                SessionInput(  # the source's runs it relies on may close from now on
                    agent=agent,
                    session=session,
                    options=options,
                    session_id=session_id,
                    depends_since=datetime.now(UTC),
                ),  # fmt: skip
                id=session_id,
                agent=agent,
                task_queue=queue,
                owned=(owner, tenant),
                static_summary=f"{agent} session, forked from {source} at turn {turn}",
                memo={FORKED_FROM: source},  # delete_session finds the forks of a session
            )
        return SessionHandle(handle, self)

    async def delete_session(
        self, session_id: str, *, force: bool = False, wait: float = DELETE_WAIT
    ) -> SessionDeletion:
        """Delete session ``session_id`` and everything of it: every workflow run of it
        (its continue-as-new chain and the sub-agent runs it started), the schedules
        that send to it and their firings, evaluation reruns of it, and the payloads
        each of those stored in a ``FileStorageDriver`` directory (on S3 or GCS the
        result's ``payloads_left`` names what to delete there). An open session's run
        in progress is asked to stop, then the session is terminated.

        Returns once Temporal answers NOT_FOUND for every run and lists none of
        them (a delete that did not take is sent again), or raises
        ``DeletionIncompleteError`` after ``wait`` seconds. Deleting again is
        safe: an unknown or deleted session gives ``found=False``.

        Forks read their earlier messages from their source: a session with forks is
        not deleted (``SessionHasForksError`` names them) unless ``force``; the
        result then names the forks, which lose the messages before their fork point.
        """
        return await delete_session(self, session_id, force=force, wait=wait)

    async def _check_horizon(self, options: SessionOptions) -> None:
        """Refuse a horizon the namespace's retention does not outlast: the session's
        closed runs would be deleted before it copies what it needs of them."""
        if options.horizon is None:
            return
        retention = await namespace_retention(self.temporal)
        if retention and options.horizon >= retention:
            raise InvalidInputError(
                f"SessionOptions(horizon={options.horizon}) is not shorter than namespace "
                f"{self.temporal.namespace!r}'s retention ({retention}): its closed runs "
                "would be deleted before the session copies them. Use at most half the "
                "retention, or leave horizon unset (half the retention)."
            )

    async def list_sessions(
        self,
        *,
        runs: bool = False,
        status: str | Sequence[str] | None = None,
        agent: str | None = None,
        min_tokens: int | None = None,
        min_cost_usd: float | None = None,
        where: Mapping[str, str | int | float | bool] | None = None,
        query: str | None = None,
        limit: int = 100,
    ) -> list[WorkflowSummary]:
        """Sessions (and single runs too, with ``runs``), newest first, one
        ``WorkflowSummary`` each, read from their search attributes.

        ``status`` is an ``AgentStatus`` value (or several: any of them). ``where``
        adds ``key = value`` clauses on search attributes, each string escaped (a
        quote is doubled), so any value filters as itself: ``where={"Owner": sub}``.
        ``query`` is a visibility query of your own, ANDed as written (unescaped).
        Of the ``limit`` rows the server lists first (open ones first)."""
        found = listing_query(
            runs=runs,
            status=status,
            agent=agent,
            min_tokens=min_tokens,
            min_cost_usd=min_cost_usd,
            where=where,
            query=query,
        )
        return await list_workflows(self.temporal, found, limit=limit)

    async def describe(self, workflow_id: str) -> WorkflowSummary:
        """The run or session ``workflow_id`` as a list row (owner and parent
        included), read from Temporal at once; ``NotFoundError`` if there is none."""
        return await describe(self.temporal, workflow_id)

    async def kind_of(self, workflow_id: str) -> Literal["session", "run"]:
        """Whether ``workflow_id`` names a session or a single run (a list shows
        both); ``NotFoundError`` for neither."""
        return await kind_of(self.temporal, workflow_id)

    def get_session(self, session_id: str) -> SessionHandle:
        check_id("session", session_id)
        return SessionHandle(self.temporal.get_workflow_handle(session_id), self)

    def get_run(self, workflow_id: str) -> RunHandle:
        check_id("run", workflow_id)
        handle = self.temporal.get_workflow_handle_for(AgentRun.run, workflow_id)
        return RunHandle(handle, self.ui_url, self.temporal.namespace)


def _connect_reason(error: RuntimeError) -> str:
    """``Connection refused`` (or ``dns error: failed to lookup address information:
    ...``) out of the SDK's ``Failed client connect: ...`` text."""
    text = str(error)
    if found := re.search(r'message: "([^"]+)"', text):
        return found.group(1)
    if found := re.search(r'ConnectError\("([^"]+)".*?error: "([^"]+)"', text):
        return f"{found.group(1)}: {found.group(2)}"
    return text.removeprefix("Failed client connect: ")


def _with_state(
    agent: str, session: AgentSession | None, export: StateExport, options: RunOptions
) -> AgentSession:
    names = [a.agent for a in export.agents]
    chosen = export.agent(agent if agent in names else None)
    session = session or AgentSession.new(agent, datetime.now(UTC), thread_kind=options.thread_kind)
    return session.model_copy(update={"state": chosen.entries_to_load()})


def _excerpt(messages: Sequence[Message], limit: int = 80) -> str:
    text = next((m.text for m in messages if m.role == "user" and m.text), messages[-1].text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


ADDRESS = re.compile(r"(?:[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\]):\d{1,5}")


def check_address(address: str) -> None:
    """Refuse an address that is not ``HOST:PORT`` before connecting (temporalio
    reports some as unreachable and raises on others)."""
    if not ADDRESS.fullmatch(address) or not 0 < int(address.rpartition(":")[2]) < 65536:
        raise ConfigurationError(
            f"{address!r} is not a Temporal address: give HOST:PORT, e.g. localhost:7233 "
            "or my-ns.a1b2c.tmprl.cloud:7233 (no scheme, no path)."
        )


def _fork_thread(source: str, answer: CheckpointAnswer, mark: TurnMark) -> ThreadData:
    """A fork's thread: the source's log up to the mark, by reference (no copy)."""
    base = ThreadBase(
        workflow_id=source,
        run_id=answer.run_id,
        version=mark.length,
        last_id=mark.last_id,
        thread_id=answer.thread_id,
    )
    return ThreadData(
        id=f"thread-{uuid.uuid4().hex[:12]}",
        kind=answer.kind,
        cursor=mark.cursor,
        messages=not_run(mark.open_calls),
        base=base,
        view=mark.view,
        prompt=mark.prompt,
    )
