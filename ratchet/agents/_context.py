"""RunContext: what an agent turn may know and use besides its messages and thread."""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import TypeAdapter

from ratchet.types import (
    ClientTool,
    EventBase,
    Message,
    PendingAction,
    question_id,
    tool_answered,
    tool_called,
    type_adapter,
)

from ._model_response import ModelResponse
from ._state_context import StateContext

if TYPE_CHECKING:
    from ._interceptors import ToolInterceptor

T = TypeVar("T")


def _no_checkpoint(progress: dict[str, Any]) -> None:
    return None


async def _no_events(event: Any) -> None:
    return None


async def _nothing_to_wait_for(*args: Any) -> None:
    return None


class _Announcements:
    """Tool events waiting for the server to hold the step they tell of."""

    def __init__(self) -> None:
        self.events: list[EventBase] = []
        self.sent = 0

    async def send(self, ready: int, sink: Callable[[Any], Awaitable[None]]) -> None:
        """Send the first ``ready`` events (those not sent yet)."""
        while self.sent < ready:
            event = self.events[self.sent]
            self.sent += 1
            await sink(event)


def tool_events(value: Any) -> list[EventBase]:
    """What watchers are told of a recorded step: the tool calls of a model's reply,
    or a tool's result."""
    message = value.message if isinstance(value, ModelResponse) else value
    if not isinstance(message, Message):
        return []
    if message.role == "tool":
        return [tool_answered(message)]
    return [tool_called(call) for call in message.tool_calls]


@dataclass
class RunContext:
    """The context of one agent turn.

    Within a turn an agent can make its expensive steps skip-on-retry with
    :meth:`once`: the first attempt records each finished step and ``once`` returns
    when Temporal has acknowledged it (in a heartbeat), so a retried attempt of the
    same turn gets the recorded value back instead of doing the step again, however
    soon after the step the worker died. Before each step ``once`` also checks that
    this attempt is still the current one (see :meth:`check_current`).

    Fast mode (local activities) has no heartbeats: there steps are not recorded
    across attempts and the checks pass.

    A step whose value is a model's reply with tool calls, or a tool's result (a
    ``tool`` message), is told to watchers (``ToolCalled``, ``ToolResult``) as soon
    as the server holds it, so they see each tool result before the text that
    follows it; a retried attempt that gets the step back does not tell it again.
    """

    run_id: str = "local"
    """The workflow id of the run (several runs may share one in a user's workflow)."""
    execution_id: str = ""
    """Unique per run, even when one workflow runs several agents."""
    agent: str = "agent"
    turn: int = 1
    attempt: int = 1
    completed: Mapping[str, Any] = field(default_factory=dict[str, Any])
    """Steps earlier attempts of this turn finished, by key (raw JSON values)."""
    checkpoint: Callable[[dict[str, Any]], None] = _no_checkpoint
    """Engine hook: takes every recorded step after each new one."""
    acknowledge_hook: Callable[[], Awaitable[None]] = _nothing_to_wait_for
    """Engine hook: returns once the steps handed to ``checkpoint`` are durable."""
    confirm_hook: Callable[[str], Awaitable[None]] = _nothing_to_wait_for
    """Engine hook: returns if this attempt is current, else raises StaleAttemptError."""
    call_id: str | None = None
    """In a tool: the id of the call being run (see :meth:`idempotency_key`)."""
    thread: Any = None
    """The turn's ``Thread`` (models continuing a service-backed thread read its cursor)."""
    event_sink: Callable[[Any], Awaitable[None]] = _no_events
    state: StateContext = field(default_factory=StateContext)
    """This agent's keyed state; changes commit when the turn succeeds."""
    resources: Mapping[str, Any] = field(default_factory=dict[str, Any])
    """The worker's resources (``build_worker(resources=...)``), by name."""
    pending: list[PendingAction] = field(default_factory=list[PendingAction])
    """Questions this turn asked with :meth:`request_input`."""
    tool_interceptor: ToolInterceptor | None = None
    """The run's tool interceptor (``RunOptions.tool_interceptor``), built on the
    worker: ``ToolCallingAgent`` asks it about each tool call before the call runs
    (``ratchet.agents._interceptors``)."""
    client_tools: list[ClientTool] = field(default_factory=list[ClientTool])
    """Tools the run's caller runs (``ratchet.agents._client_tools``): ``ToolCallingAgent``
    offers them to the model; a call to one is returned as pending work."""
    _recorded: dict[str, Any] = field(default_factory=dict[str, Any], init=False, repr=False)
    _announced: _Announcements = field(default_factory=_Announcements, init=False, repr=False)
    """Shared with the contexts ``for_call`` makes (a shallow copy)."""

    def __post_init__(self) -> None:
        self._recorded = dict(self.completed)

    def idempotency_key(self, call_id: str | None = None) -> str:
        """A key for a tool call's side effect (to pass to a payment API, say).

        It is the same on every attempt of this turn whenever the model's reply was
        checkpointed (a model call made again returns new call ids). In a tool,
        ``call_id`` defaults to the call being run."""
        call_id = call_id or self.call_id
        if not call_id:
            raise ValueError(
                "idempotency_key() needs a call id: call it from a tool that takes a "
                "RunContext parameter, or pass the ToolCall's id."
            )
        return f"{self.run_id}/{self.execution_id}/turn-{self.turn}/{call_id}"

    def for_call(self, call_id: str) -> RunContext:
        """This context as the tool running call ``call_id`` sees it (same steps,
        state and hooks)."""
        context = copy.copy(self)
        context.call_id = call_id
        return context

    async def once(
        self,
        key: str,
        step: Callable[[], Awaitable[T]],
        result_type: type[T],
        *,
        wait: bool = True,
    ) -> T:
        """Run ``step`` unless an earlier attempt of this turn already finished it.

        Returns once the server holds the step's result. ``wait=False`` returns
        without waiting, for a step that may be the turn's last (the turn's result
        records it): the check before the next step writes it first.
        """
        adapter: TypeAdapter[T] = type_adapter(result_type)
        if key in self._recorded:
            return adapter.validate_python(self._recorded[key])
        await self._confirm(f"step {key!r}")
        value = await step()
        self.record({key: adapter.dump_python(value, mode="json")})
        self._announced.events.extend(tool_events(value))
        if wait:
            ready = len(self._announced.events)
            await self.acknowledge_hook()
            await self._announced.send(ready, self.event_sink)
        return value

    async def check_current(self) -> None:
        """Raise ``StaleAttemptError`` if this attempt is no longer the current one
        (the server timed it out and retried the turn elsewhere); call it before a
        side effect that does not go through :meth:`once`. Steps recorded so far are
        written first."""
        await self._confirm("a side effect")

    async def _confirm(self, before: str) -> None:
        # The hook writes every step recorded so far: what they tell can go out.
        ready = len(self._announced.events)
        await self.confirm_hook(before)
        await self._announced.send(ready, self.event_sink)

    def record(self, steps: Mapping[str, Any]) -> None:
        """Record finished steps (raw JSON values, by key) as ``once`` does; the
        engine uses it for steps it takes within the turn (a compaction's summary)."""
        self._recorded.update(steps)
        self.checkpoint(dict(self._recorded))

    def request_input(self, question: str) -> str:
        """Ask the user ``question``. The run waits (status AWAITING_INPUT) after this
        turn until someone answers with ``provide_input``; the answer arrives on the
        next turn as a user message. Returns the question's id."""
        if not question.strip():
            raise ValueError("request_input needs a question; got an empty string.")
        id = question_id(self.execution_id, self.turn, len(self.pending) + 1)
        self.pending.append(PendingAction(id=id, kind="input", question=question))
        return id

    async def emit(self, event: Any) -> None:
        """Send an event to whoever watches the run live (``ratchet watch``,
        ``RunHandle.events()``): a ``RunEvent``, or any JSON-able value, which
        arrives as a ``custom`` event. Events are for watching; they are not
        kept in the thread, and a retried attempt of the turn sends its own."""
        await self.event_sink(event)
