"""The turn activity: one ``Agent.run`` call, hosted on a worker.

``TurnInput`` / ``TurnOutput`` are the only shapes that cross into history for a
turn. Every field added later gets a default, so recorded histories still decode.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, Field
from temporalio import activity
from temporalio.exceptions import ApplicationError

from ratchet.agents.agent import Agent, Result
from ratchet.agents.context import RunContext
from ratchet.agents.messages import Message, new_id
from ratchet.agents.state import ThreadData
from ratchet.agents.thread import ChatMessageThread
from ratchet.agents.usage import Usage
from ratchet.errors import AgentNotFoundError, ModelError, UsageError

TURN_ACTIVITY = "ratchet.turn"
DEFAULT_HEARTBEAT_INTERVAL = 2.0

AgentFactory = Agent | Callable[[], Agent]


class TurnInput(BaseModel):
    """What a turn needs: which agent, the thread so far, and messages new to it."""

    version: int = 1
    run_id: str
    agent: str
    execution_id: str = ""
    turn: int
    thread: ThreadData
    new_messages: list[Message] = Field(default_factory=list)


class TurnOutput(BaseModel):
    """What a turn appended to the thread, in order.

    An entry is a new message, or the id of one of the input's ``new_messages``
    (those are already in history, so they are not written again).
    """

    added: list[Message | str] = Field(default_factory=list)
    final_id: str | None = None
    usage: Usage = Usage()


class TurnActivities:
    """Hosts the registered agents. One instance per worker; agents are built once."""

    def __init__(
        self, agents: Mapping[str, AgentFactory], *, task_queue: str | None = None
    ) -> None:
        self._factories = dict(agents)
        self._agents: dict[str, Agent] = {}
        self._task_queue = task_queue

    @property
    def agent_names(self) -> list[str]:
        return sorted(self._factories)

    def agent(self, name: str) -> Agent:
        if name not in self._agents:
            if name not in self._factories:
                raise AgentNotFoundError(name, self.agent_names, self._task_queue)
            factory = self._factories[name]
            self._agents[name] = factory if isinstance(factory, Agent) else factory()
        return self._agents[name]

    @activity.defn(name=TURN_ACTIVITY)
    async def run_turn(self, input: TurnInput) -> TurnOutput:
        try:
            return await self._run_turn(input)
        except UsageError as e:
            raise ApplicationError(str(e), type=type(e).__name__, non_retryable=True) from e
        except ModelError as e:
            delay = timedelta(seconds=e.retry_after) if e.retry_after is not None else None
            raise ApplicationError(
                str(e), type="ModelError", non_retryable=not e.retryable, next_retry_delay=delay
            ) from e

    async def _run_turn(self, input: TurnInput) -> TurnOutput:
        info = activity.info()
        agent = self.agent(input.agent)
        progress: dict[str, Any] = _earlier_progress(info.heartbeat_details)

        def checkpoint(recorded: dict[str, Any]) -> None:
            progress.clear()
            progress.update(recorded)
            activity.heartbeat(progress)

        context = RunContext(
            run_id=input.run_id,
            execution_id=input.execution_id,
            agent=input.agent,
            turn=input.turn,
            attempt=info.attempt,
            completed=dict(progress),
            checkpoint=checkpoint,
        )
        thread = ChatMessageThread(input.thread.messages, id=input.thread.id)
        before = len(thread)
        interval = _heartbeat_interval(info.heartbeat_timeout)
        task = asyncio.create_task(agent.run(list(input.new_messages), thread, context))
        try:
            # Heartbeat while the agent works, so a dead worker is noticed within the
            # heartbeat timeout and cancellation reaches the turn.
            while not task.done():
                await asyncio.wait({task}, timeout=interval)
                if not task.done():
                    activity.heartbeat(progress)
        finally:
            if not task.done():
                task.cancel()
        result = task.result()
        if not isinstance(result, Result):
            raise UsageError(
                f"Agent {input.agent!r} returned {type(result).__name__} from run(); "
                "return a ratchet.agents.Result."
            )
        added = thread.messages[before:]
        final = result.final_response
        if final is not None and all(m is not final for m in added):
            added.append(final)
        for message in added:
            message.id = message.id or new_id()
        known = {m.id for m in input.new_messages}
        return TurnOutput(
            added=[m.id if m.id in known else m for m in added],
            final_id=final.id if final is not None else None,
            usage=result.usage,
        )


def _earlier_progress(details: Any) -> dict[str, Any]:
    if details and isinstance(details[0], dict):
        return dict(details[0])
    return {}


def _heartbeat_interval(timeout: timedelta | None) -> float:
    if not timeout:
        return DEFAULT_HEARTBEAT_INTERVAL
    return max(0.2, min(DEFAULT_HEARTBEAT_INTERVAL, timeout.total_seconds() / 3))
