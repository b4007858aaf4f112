"""The turn activity: one ``Agent.run`` call, hosted on a worker.

``TurnInput`` / ``TurnOutput`` are the only shapes that cross into history for a
turn. Every field added later gets a default, so recorded histories still decode.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Coroutine, Mapping
from datetime import timedelta
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from ratchet.activities.events import DEFAULT_BATCH_INTERVAL, TurnEvents
from ratchet.activities.owner import workflow_of
from ratchet.agents import views
from ratchet.agents.agent import Agent, Result
from ratchet.agents.compaction import Compaction, Summarize
from ratchet.agents.context import RunContext
from ratchet.agents.messages import Message, approximate_size, new_id
from ratchet.agents.state import Span
from ratchet.agents.state_context import (
    StateContext,
)
from ratchet.agents.thread import MESSAGES, ChatMessageThread, ServiceThread, Thread
from ratchet.agents.usage import Usage
from ratchet.errors import (
    PAYLOAD_LIMIT,
    AgentBuildError,
    AgentNotFoundError,
    IncompatibleThreadError,
    ModelError,
    PayloadTooLargeError,
    StaleAttemptError,
    ThreadResolutionError,
    UsageError,
)
from ratchet.telemetry import record_turn
from ratchet.wire.handoff import HANDOFF
from ratchet.wire.names import ATTEMPTS_KEY, THREAD_NOT_CACHED, TOOL_ACTIVITY, TURN_ACTIVITY
from ratchet.wire.turns import AttemptRecord, ToolInput, TurnInput, TurnOutput

from .heartbeats import Heartbeats, TurnCancelled, stale_message
from .prompt_fit import Fitted, LogPrompt, PromptFit
from .resources import WorkerResources
from .state_refs import StateCache, new_write_id, resolve_state
from .thread_log import Holder, LogNotCached, resolve_log
from .threads import ThreadCache, resolve_thread

CHECKPOINT_BUDGET = 512 * 1024
"""Most bytes of finished steps a turn keeps in its heartbeat details."""

AgentFactory = Agent | Callable[[], Agent]


class TurnActivities:
    """Hosts the registered agents. One instance per worker; agents are built once."""

    def __init__(
        self,
        agents: Mapping[str, AgentFactory],
        *,
        task_queue: str | None = None,
        thread_cache: ThreadCache | None = None,
        payload_limit: int | None = PAYLOAD_LIMIT,
        resources: WorkerResources | None = None,
        state_cache: StateCache | None = None,
        event_batch_interval: timedelta | None = DEFAULT_BATCH_INTERVAL,
    ) -> None:
        self._factories = dict(agents)
        self.event_batch_interval = event_batch_interval
        """How often a turn sends its live events; ``None`` sends none."""
        self._agents: dict[str, Agent] = {}
        self._task_queue = task_queue
        self.thread_cache = thread_cache if thread_cache is not None else ThreadCache()
        self.payload_limit = payload_limit
        """Fail a turn whose result is larger; ``None`` when payloads go to external storage."""
        self.resources = resources if resources is not None else WorkerResources()
        self.state_cache = state_cache if state_cache is not None else StateCache()

    @property
    def agent_names(self) -> list[str]:
        return sorted(self._factories)

    def agent(self, name: str) -> Agent:
        if name not in self._agents:
            if name not in self._factories:
                raise AgentNotFoundError(name, self.agent_names, self._task_queue)
            factory = self._factories[name]
            self._agents[name] = factory if isinstance(factory, Agent) else _built(name, factory)
        return self._agents[name]

    async def close_agents(self) -> None:
        """Close what the agents built here hold open (``aclose()``), at shutdown."""
        for name, agent in self._agents.items():
            close = getattr(agent, "aclose", None)
            try:
                if close is not None:
                    await close()
            except Exception:
                logging.getLogger(__name__).exception("Closing agent %r failed", name)

    @activity.defn(name=TURN_ACTIVITY)
    async def run_turn(self, input: TurnInput) -> TurnOutput:
        try:
            return await self._run_turn(input)
        except StaleAttemptError as e:
            # The server has given the turn to another attempt and would refuse this
            # one's result: end without reporting one.
            activity.logger.warning(str(e))
            activity.raise_complete_async()
        except asyncio.CancelledError:
            # The SDK's own heartbeat heard first that the attempt is gone.
            details = activity.cancellation_details()
            if details is not None and (details.not_found or details.timed_out):
                cause = "its worker's heartbeat was refused"
                activity.logger.warning(stale_message(_describe_turn(input), "", cause))
            elif details is not None and details.worker_shutdown:
                # The SDK reports it as a retryable WorkerShutdown failure, with the
                # last acknowledged heartbeat (the turn's checkpoint).
                activity.logger.warning(
                    f"{_describe_turn(input)} stopped: its worker's grace period ended; "
                    "another worker resumes it from its checkpoint."
                )
            raise
        except TurnCancelled:
            handle = activity.client().get_async_activity_handle(
                task_token=activity.info().task_token
            )
            with contextlib.suppress(RPCError):
                await handle.report_cancellation()
            activity.raise_complete_async()
        except (UsageError, ThreadResolutionError) as e:
            raise ApplicationError(str(e), type=type(e).__name__, non_retryable=True) from e
        except ModelError as e:
            delay = timedelta(seconds=e.retry_after) if e.retry_after is not None else None
            raise ApplicationError(
                str(e), type=type(e).__name__, non_retryable=not e.retryable, next_retry_delay=delay
            ) from e

    async def _run_turn(self, input: TurnInput) -> TurnOutput:
        info = activity.info()
        agent = self.agent(input.agent)
        progress: dict[str, Any] = _earlier_progress(info.heartbeat_details)
        earlier = progress.pop(ATTEMPTS_KEY, [])
        attempts = [*earlier, _this_attempt(info)]
        progress[ATTEMPTS_KEY] = attempts
        sizes: dict[str, int] = {}
        beats = None
        if not info.is_local:  # a local activity (fast mode) has no heartbeats
            beats = Heartbeats(
                activity.client().get_async_activity_handle(task_token=info.task_token),
                info.heartbeat_timeout,
                lambda: progress,
                describe=_describe_turn(input),
            )

        def checkpoint(recorded: dict[str, Any]) -> None:
            # Heartbeat details are one payload: steps are kept in order while they fit
            # the budget; a step left out runs again if the turn is retried.
            if beats is None:
                return
            progress.clear()
            progress[ATTEMPTS_KEY] = attempts
            used = 0
            for key, value in recorded.items():
                if key not in sizes:
                    sizes[key] = len(json.dumps(value, default=str))
                if used + sizes[key] <= CHECKPOINT_BUDGET:
                    progress[key] = value
                    used += sizes[key]
            beats.changed()

        context = RunContext(
            run_id=input.run_id or workflow_of(info)[0],
            execution_id=input.execution_id,
            agent=input.agent,
            turn=input.turn,
            attempt=info.attempt,
            completed={k: v for k, v in progress.items() if k != ATTEMPTS_KEY},
            checkpoint=checkpoint,
            resources=self.resources,
            recording=input.recording,
        )
        if beats is not None:
            context.acknowledge_hook = beats.write
            context.confirm_hook = beats.confirm
        given: list[Message] = []  # a run's thread as its workflow holds it
        fit = PromptFit.of(input, agent, context)
        fitted = Fitted(ChatMessageThread(id=self._thread_id(input)), list(input.new_messages))

        async def turn() -> Any:
            nonlocal given, fitted
            prompt: Thread | LogPrompt
            if input.view is not None:
                prompt = await self._log_thread(input, agent, context)
            else:
                prompt = await self._thread(input, agent)
                given = prompt.messages
            entries = input.state
            if input.state_refs:  # values named by reference: from the cache or the workflow
                entries = await resolve_state(
                    self.state_cache,
                    activity.client(),
                    input.state,
                    input.state_refs,
                    input.session_id,
                )
            context.state = StateContext(
                entries,
                serializer=agent.state_serializer,
                shared=input.shared,
                conflicts=input.conflicts,
                agent=input.agent,
            )
            new = prompt.new if isinstance(prompt, LogPrompt) else fitted.new
            fitted = await fit.run(agent, prompt, new, context, input)
            return fitted.result

        async with contextlib.AsyncExitStack() as stack:
            if input.events and self.event_batch_interval is not None:
                events = TurnEvents(
                    run_id=context.run_id,
                    agent=input.agent,
                    turn=input.turn,
                    attempt=info.attempt,
                    batch_interval=self.event_batch_interval,
                )
                context.event_sink = (await stack.enter_async_context(events)).emit
            result = await _alive_while(turn(), beats)
        thread, before, new_messages = fitted.thread, fitted.before, fitted.new

        if not isinstance(result, Result):
            raise UsageError(
                f"Agent {input.agent!r} returned {type(result).__name__} from run(); "
                "return a ratchet.agents.Result."
            )
        pending = [*context.pending, *result.pending]
        if pending and result.final_response is not None:
            raise UsageError(
                f"Agent {input.agent!r} returned a final response with {len(pending)} pending "
                "action(s) (approvals, questions, durable tools, sub-agents); their results "
                "come on the next turn, so return Result(pending=...) without final_response."
            )
        added = thread.messages[before:]
        final = result.final_response
        if final is not None and all(m is not final for m in added):
            added.append(final)
        for message in added:
            message.id = message.id or new_id()
        known = {m.id for m in new_messages}
        usage = result.usage
        view: list[Span] | None = None
        if fitted.compacted is not None:
            view, note, compaction_usage = fitted.compacted
            usage = usage + compaction_usage
            if note is not None:
                added.insert(0, note)
        output = TurnOutput(
            added=[m.id if m.id in known else m for m in added],
            final_id=final.id if final is not None else None,
            usage=usage,
            view=view,
            prompt=fit.report(result.usage, fitted.sent) if thread.kind == MESSAGES else None,
            cursor=thread.cursor if thread.kind != MESSAGES else None,
            state=context.state.changes,
            shares=context.state.new_tokens,
            pending=pending,
            handoff=result.handoff,
            attempts=[AttemptRecord.model_validate(a) for a in earlier],
        )
        if output.state:
            output.write_id = new_write_id()
            self.state_cache.put_written(output.write_id, output.state)
        self._check_size(input, output)
        if input.view is not None and input.thread_ref is not None:
            # Provisional until a later turn's reference confirms the result was committed.
            fresh = [m for m in added if m.id not in known]
            log = self.thread_cache.log(input.thread_ref.id)
            position = input.thread_ref.version + input.new_count
            delta = log.put(position, fresh, provisional=True)
            self.thread_cache.log_changed(input.thread_ref.id, delta)
        elif input.thread_ref is not None:
            self.thread_cache.put(input.thread_ref.key, [*given, *added])
        record_turn(input.agent, output.usage)
        return output

    @activity.defn(name=TOOL_ACTIVITY)
    async def run_tool(self, input: ToolInput) -> Message:
        """A durable or approved tool call. The tool's exception fails the attempt,
        so the activity's retry policy applies; the workflow tells the model if
        the last attempt fails."""
        info = activity.info()
        try:
            tool = await self.agent(input.agent).find_tool(input.call.name)
        except UsageError as e:
            raise ApplicationError(str(e), type=type(e).__name__, non_retryable=True) from e
        if tool is None:
            raise ApplicationError(
                f"Agent {input.agent!r} on this worker has no tool {input.call.name!r}; "
                "deploy the agent with that tool, or reject the call.",
                type="ToolNotFoundError",
                non_retryable=True,
            )
        context = RunContext(
            run_id=workflow_of(info)[0],
            execution_id=input.execution_id,
            agent=input.agent,
            turn=input.turn,
            attempt=info.attempt,
            resources=self.resources,
        )
        recorded = input.recording.answer(input.call) if input.recording else None
        message = recorded or await tool.invoke(input.call, context, raise_errors=True)
        message.id = new_id()
        return message

    @staticmethod
    def _thread_id(input: TurnInput) -> str:
        if input.thread_ref is not None:
            return input.thread_ref.id
        return input.thread.id if input.thread is not None else ""

    async def _thread(self, input: TurnInput, agent: Agent) -> Thread:
        data = input.thread
        kind = data.kind if data is not None else MESSAGES
        if kind not in agent.thread_kinds:
            raise IncompatibleThreadError(
                f"Agent {input.agent!r} cannot continue this thread: it is a {kind!r} thread "
                f"and the agent works with {', '.join(sorted(agent.thread_kinds))} threads. "
                + _THREAD_HINTS.get(kind, "")
            )
        if data is not None and kind != MESSAGES:
            return ServiceThread(kind, id=data.id, cursor=data.cursor, unsent=data.messages)
        if data is not None:
            return ChatMessageThread(data.messages, id=data.id)
        messages: list[Message] = []
        if input.thread_ref is not None:
            messages = await resolve_thread(self.thread_cache, input.thread_ref)
        return ChatMessageThread(messages, id=self._thread_id(input))

    async def _log_thread(self, input: TurnInput, agent: Agent, context: RunContext) -> LogPrompt:
        """A session turn: the agent's view of the log and its new messages, after
        the session's compaction policy (a new view, a summary note), if any."""
        ref, view = input.thread_ref, input.view
        assert ref is not None and view is not None
        if MESSAGES not in agent.thread_kinds:
            raise IncompatibleThreadError(
                f"Agent {input.agent!r} cannot continue this thread: it is a {MESSAGES!r} "
                f"thread and the agent works with {', '.join(sorted(agent.thread_kinds))} "
                "threads. " + _THREAD_HINTS[MESSAGES]
            )
        start = ref.version
        length = start + input.new_count
        info = activity.info()
        log = self.thread_cache.log(ref.id)
        # Inline (a local activity), or handed over by the workflow in this process.
        handed = input.new_messages or HANDOFF.take(ref.id, start, input.new_last_id)
        if handed and len(handed) == input.new_count:
            self.thread_cache.log_changed(ref.id, log.put(start, handed))
        try:
            message_at = await resolve_log(
                self.thread_cache,
                None if info.is_local else activity.client(),
                Holder(*workflow_of(info), ref.id),
                length=start,
                last_id=ref.last_id,
                ranges=[*views.ranges(view, start), (start, length)],
            )
        except LogNotCached as e:
            # The workflow is blocked on this local activity and cannot answer a
            # query: it takes the turn again as a regular activity.
            raise ApplicationError(str(e), type=THREAD_NOT_CACHED, non_retryable=True) from e
        messages, shown = views.render(view, start, message_at)
        new = [message_at(p) for p in range(start, length)]
        prompt = LogPrompt(ref.id, messages, shown, new, start=start, length=length)
        policy = input.compaction
        found = views.compact(policy, messages, shown) if policy is not None else None
        if policy is not None and found is not None:
            pinned = views.materialize(found.pinned, message_at)
            note, usage = await self._summarise(policy, pinned, found.older, context)
            rest = views.materialize(found.rest, message_at)
            prompt.messages = [*pinned, *([note] if note is not None else []), *rest]
            prompt.shown = [*found.pinned, *([(length, False)] if note else []), *found.rest]
            prompt.note, prompt.usage = note, usage
        return prompt

    async def _summarise(
        self,
        policy: Compaction,
        pinned: list[Message],
        older: list[Message],
        context: RunContext,
    ) -> tuple[Message | None, Usage]:
        """For ``Summarize``: the note that replaces ``older``, the summariser agent's
        reply (a step a retried attempt of the turn does not repeat)."""
        if not isinstance(policy, Summarize) or not older:
            return None, Usage()
        prefix = "compaction/"
        sub = RunContext(
            run_id=context.run_id,
            execution_id=context.execution_id,
            agent=policy.agent,
            turn=context.turn,
            attempt=context.attempt,
            completed={
                k[len(prefix) :]: v for k, v in context.completed.items() if k.startswith(prefix)
            },
            checkpoint=lambda steps: context.record({prefix + k: v for k, v in steps.items()}),
            acknowledge_hook=context.acknowledge_hook,
            confirm_hook=context.confirm_hook,
            resources=self.resources,
        )
        result = await self.agent(policy.agent).run([], ChatMessageThread([*pinned, *older]), sub)
        if result.final_response is None:
            raise UsageError(
                f"Summariser agent {policy.agent!r} returned no final_response; it must "
                "answer with the summary."
            )
        note = policy.summary_message(result.final_response, len(older))
        note.id = new_id()
        return note, result.usage

    def _check_size(self, input: TurnInput, output: TurnOutput) -> None:
        if self.payload_limit is None:
            return
        # Serialise only when the estimate comes near the limit.
        estimate = sum(approximate_size(m) for m in output.added if isinstance(m, Message))
        estimate += sum(len(json.dumps(c.data)) for c in output.state)
        if estimate < self.payload_limit // 2:
            return
        size = len(output.model_dump_json())
        if size <= self.payload_limit:
            return
        messages = [m for m in output.added if isinstance(m, Message)]
        if not messages or sum(map(approximate_size, messages)) < size // 2:
            keys = ", ".join(c.key for c in output.state)
            raise PayloadTooLargeError(
                f"Turn {input.turn} of agent {input.agent!r} produced a {_mb(size)} result, over "
                f"Temporal's {_mb(self.payload_limit)} payload limit, most of it state ({keys}). "
                "Keep large data out of agent state (store it elsewhere and keep a reference), "
                "or give the client external payload storage: "
                "AgentClient.connect(..., payload_storage=...)."
            )
        largest = max(messages, key=approximate_size)
        raise PayloadTooLargeError(
            f"Turn {input.turn} of agent {input.agent!r} produced a {_mb(size)} result, over "
            f"Temporal's {_mb(self.payload_limit)} payload limit; the largest message is "
            f"{_describe(largest)} at {_mb(approximate_size(largest))}. Return less from the tool "
            "(store the data elsewhere and return a reference or a summary), or give the "
            "client external payload storage: AgentClient.connect(..., payload_storage=...)."
        )


_THREAD_HINTS = {
    "openai.responses": (
        "The conversation is stored by the OpenAI Responses API; run it with an agent whose "
        "model is OpenAIResponsesModel, or start a new session for this agent."
    ),
    MESSAGES: (
        "This agent's model keeps the conversation at its service; start its runs with "
        "RunOptions(thread_kind=...) naming that service."
    ),
}


def _built(name: str, factory: Callable[[], Agent]) -> Agent:
    """The agent ``factory`` builds; a factory that fails is the developer's to fix,
    so the run fails at once (AgentBuildError is not retried)."""
    try:
        agent = factory()
    except Exception as e:
        raise AgentBuildError(
            f"Agent {name!r} cannot be built: its factory raised {type(e).__name__}: {e}. "
            "Fix the factory the worker hosts it with; its runs fail until then."
        ) from e
    if not isinstance(agent, Agent):
        raise AgentBuildError(
            f"Agent {name!r}: its factory returned {agent!r:.60}, a {type(agent).__name__}, "
            "not an Agent: return one (e.g. ToolCallingAgent(model, tools))."
        )
    return agent


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def _describe(message: Message) -> str:
    if message.role == "tool":
        name = f"tool {message.name!r}" if message.name else "a tool"
        return f"the result of {name} (call {message.tool_call_id})"
    return f"a {message.role} message"


def _this_attempt(info: activity.Info) -> dict[str, Any]:
    worker = activity.client().identity if not info.is_local else ""
    return {"attempt": info.attempt, "worker": worker, "started_at": info.started_time.isoformat()}


def _describe_turn(input: TurnInput) -> str:
    return f"Turn {input.turn} (attempt {activity.info().attempt}) of agent {input.agent!r}"


def _earlier_progress(details: Any) -> dict[str, Any]:
    if details and isinstance(details[0], dict):
        return dict(details[0])
    return {}


async def _alive_while(work: Coroutine[Any, Any, Any], beats: Heartbeats | None) -> Any:
    """Run the agent's work while heartbeating, so a dead worker is noticed within
    the heartbeat timeout and a cancelled or stale attempt stops."""
    if beats is None:
        return await work
    task = asyncio.create_task(work)
    alive = asyncio.create_task(beats.keep_alive())
    try:
        await asyncio.wait({task, alive}, return_when=asyncio.FIRST_COMPLETED)
        if alive.done():
            alive.result()  # StaleAttemptError or TurnCancelled
        return task.result()
    except (StaleAttemptError, TurnCancelled):
        raise  # the SDK reports nothing for this attempt
    except BaseException:
        beats.hand_over()  # the SDK reports this failure or cancellation
        raise
    finally:
        for t in (task, alive):
            t.cancel()
        await asyncio.gather(task, alive, return_exceptions=True)
