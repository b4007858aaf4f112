"""The turn activity: one ``Agent.run`` call, hosted on a worker.

A turn finds its prompt (``prompt``), applies the run's compaction policy, fits
the prompt to the model's window and runs the agent (``prompt_fit``), then
returns what the agent added (``turn_result``); each attempt heartbeats the steps
it finishes (``attempt``). ``TurnInput`` / ``TurnOutput`` are the only shapes that
cross into history for a turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import timedelta

from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from ratchet.activities._event_publisher import DEFAULT_BATCH_INTERVAL, TurnEvents
from ratchet.activities._owner import workflow_of
from ratchet.agents import Agent, InterceptorFactory, RunContext, StateContext, ToolInterceptor
from ratchet.agents._engine import MESSAGES, intercepted
from ratchet.errors import (
    PAYLOAD_LIMIT,
    AgentBuildError,
    AgentNotFoundError,
    ConfigurationError,
    IncompatibleThreadError,
    ModelError,
    StaleAttemptError,
    ThreadResolutionError,
    UsageError,
)
from ratchet.telemetry import record_attempt_start, record_throttle, record_turn
from ratchet.types import Message, new_id
from ratchet.wire import (
    TOOL_ACTIVITY,
    TURN_ACTIVITY,
    InterceptorRef,
    ToolInput,
    TurnInput,
    TurnOutput,
)

from ._attempt import Attempt
from ._heartbeats import TurnCancelled, stale_message
from ._log_cache import ThreadCache
from ._prompt import compact, load_prompt
from ._prompt_fit import Fitted, PromptFit
from ._resources import WorkerResources
from ._state_refs import StateCache, new_write_id, resolve_state
from ._throttling import limit_reached, spent_before, throttle_of, throttled_error
from ._turn_result import check_size, turn_output
from ._unhosted_agent import pause_its_schedule

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
        tool_interceptors: Mapping[str, InterceptorFactory] | None = None,
    ) -> None:
        self._factories = dict(agents)
        self.tool_interceptors = dict(tool_interceptors or {})
        """The tool interceptors a run's options may name, by name."""
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

    def interceptor(self, ref: InterceptorRef | None) -> ToolInterceptor | None:
        """The run's tool interceptor, built from the factory registered under its name."""
        if ref is None:
            return None
        factory = self.tool_interceptors.get(ref.name)
        if factory is None:
            known = ", ".join(sorted(self.tool_interceptors)) or "(none)"
            raise ConfigurationError(
                f"The run names tool interceptor {ref.name!r}, which is not registered on "
                f"this worker (task queue {self._task_queue!r}); registered: {known}. Pass it "
                "to build_worker(tool_interceptors={...}), add the plugin that brings it to "
                "build_worker(plugins=[...]) (reruns: ratchet.evals.EvalsPlugin), or fix "
                "RunOptions.tool_interceptor."
            )
        try:
            return factory(ref.config)
        except (ValueError, TypeError, KeyError) as e:  # pydantic's ValidationError too
            raise ConfigurationError(
                f"Tool interceptor {ref.name!r} refused the run's config: {e}. Fix "
                "RunOptions.tool_interceptor's config."
            ) from e

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
        except Exception as e:
            failure = await _turn_failure(e, input)
            if failure is e:
                raise
            if isinstance(e, ModelError) and throttle_of(e):
                # Small: the server replaces a failure over 4 KB (with the cause
                # chain's stack traces, a throttle's is) by "Failure exceeds size limit."
                raise failure from None
            raise failure from e

    async def _run_turn(self, input: TurnInput) -> TurnOutput:
        info = activity.info()
        if not info.is_local:
            record_attempt_start(info, input.agent)
        if spent := spent_before(input, info):
            raise ApplicationError(spent, type="TimeoutError", non_retryable=True)
        agent = self.agent(input.agent)
        _check_kind(input, agent)
        attempt = Attempt(activity.info(), _describe_turn(input))
        context = self._context(input, attempt)
        fit = PromptFit.of(input, agent, context)
        async with self._events(input, context, attempt.failure_before()):
            fitted = await attempt.alive_while(self._answer(input, agent, context, fit))
        output = turn_output(input, fitted, context, fit, attempt.records)
        if output.state:
            output.write_id = new_write_id()
            self.state_cache.put_written(output.write_id, output.state)
        check_size(input, output, self.payload_limit)
        self._remember(input, output)
        record_turn(input.agent, output.usage)
        return output

    def _context(self, input: TurnInput, attempt: Attempt) -> RunContext:
        info = activity.info()
        context = RunContext(
            run_id=workflow_of(info)[0],
            execution_id=input.execution_id,
            agent=input.agent,
            turn=input.turn,
            attempt=info.attempt,
            completed=attempt.completed,
            checkpoint=attempt.checkpoint,
            resources=self.resources,
            tool_interceptor=self.interceptor(input.tool_interceptor),
            client_tools=input.client_tools,
        )
        if attempt.beats is not None:
            context.acknowledge_hook = attempt.beats.write
            context.confirm_hook = attempt.beats.confirm
        return context

    @contextlib.asynccontextmanager
    async def _events(
        self, input: TurnInput, context: RunContext, failed_before: str | None = None
    ) -> AsyncIterator[None]:
        """Send the turn's live events to its workflow, in batches, while it runs."""
        if not input.events or self.event_batch_interval is None:
            yield
            return
        events = TurnEvents(
            run_id=input.run_id or context.run_id,  # a session's run: its label
            agent=input.agent,
            turn=input.turn,
            attempt=context.attempt,
            batch_interval=self.event_batch_interval,
            failed_before=failed_before,
        )
        async with events:
            context.event_sink = events.emit
            yield

    async def _answer(
        self, input: TurnInput, agent: Agent, context: RunContext, fit: PromptFit
    ) -> Fitted:
        """The prompt (found, compacted), the agent's state, and its answer."""
        prompt = await load_prompt(self.thread_cache, input)
        if input.compaction is not None:
            await compact(prompt, input.compaction, context, self.agent)
        entries = input.state
        if input.state_refs:  # values named by reference: from the cache or the workflow
            entries = await resolve_state(
                self.state_cache, activity.client(), input.state, input.state_refs, input.session_id
            )
        context.state = StateContext(
            entries,
            serializer=agent.state_serializer,
            shared=input.shared,
            conflicts=input.conflicts,
            agent=input.agent,
        )
        return await fit.run(agent, prompt, context, input)

    def _remember(self, input: TurnInput, output: TurnOutput) -> None:
        """Cache the turn's messages at their log positions, provisionally: until a
        later turn's reference confirms the workflow committed this result."""
        fresh = [m for m in output.added if isinstance(m, Message)]
        thread_id = input.thread.id
        position = input.thread.length + input.new_count
        delta = self.thread_cache.log(thread_id).put(position, fresh, provisional=True)
        self.thread_cache.log_changed(thread_id, delta)

    @activity.defn(name=TOOL_ACTIVITY)
    async def run_tool(self, input: ToolInput) -> Message:
        """A durable or approved tool call. The tool's exception fails the attempt,
        so the activity's retry policy applies; the workflow tells the model if
        the last attempt fails."""
        info = activity.info()
        try:
            tool = await self.agent(input.agent).find_tool(input.call.name)
            interceptor = self.interceptor(input.tool_interceptor)
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
            tool_interceptor=interceptor,
        )
        answer = intercepted(input.call, tool, context).answer
        message = answer or await tool.invoke(input.call, context, raise_errors=True)
        message.id = new_id()
        return message


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


async def _turn_failure(error: Exception, input: TurnInput) -> Exception:
    """What a failed attempt reports: the developer's mistakes are not retried; a
    real failure that reaches the run's ``max_attempts`` is the turn's last."""
    if isinstance(error, UsageError | ThreadResolutionError):
        paused = await pause_its_schedule(error) if isinstance(error, AgentNotFoundError) else ""
        kind = type(error).__name__
        return ApplicationError(str(error) + paused, type=kind, non_retryable=True)
    if isinstance(error, ModelError):
        return _model_failure(error, input)
    why = limit_reached(input, activity.info())
    if why is None or (isinstance(error, ApplicationError) and error.non_retryable):
        return error
    kind = error.type if isinstance(error, ApplicationError) else None
    return ApplicationError(
        f"{error} ({why})", type=kind or type(error).__name__, non_retryable=True
    )


def _model_failure(error: ModelError, input: TurnInput) -> ApplicationError:
    """The failure a model error reports: a throttle waits out the provider's delay
    and counts no attempt; another error counts one, and may be the last."""
    throttle = throttle_of(error)
    if throttle is not None:
        record_throttle(activity.info(), input.agent)
        return throttled_error(error, throttle, input)
    why = limit_reached(input, activity.info()) if error.retryable else None
    delay = timedelta(seconds=error.retry_after) if error.retry_after is not None else None
    return ApplicationError(
        f"{error} ({why})" if why else str(error),
        type=type(error).__name__,
        non_retryable=not error.retryable or why is not None,
        next_retry_delay=delay,
    )


def _describe_turn(input: TurnInput) -> str:
    return f"Turn {input.turn} (attempt {activity.info().attempt}) of agent {input.agent!r}"


def _check_kind(input: TurnInput, agent: Agent) -> None:
    kind = input.thread.kind
    if kind not in agent.thread_kinds:
        raise IncompatibleThreadError(
            f"Agent {input.agent!r} cannot continue this thread: it is a {kind!r} thread "
            f"and the agent works with {', '.join(sorted(agent.thread_kinds))} threads. "
            + _THREAD_HINTS.get(kind, "")
        )
