"""RunContext: what an agent turn may know and use besides its messages and thread."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import TypeAdapter

from .compact import type_adapter
from .pending import PendingAction
from .state_context import StateContext

T = TypeVar("T")


def _no_checkpoint(progress: dict[str, Any]) -> None:
    return None


async def _no_events(event: Any) -> None:
    return None


@dataclass
class RunContext:
    """The context of one agent turn.

    Within a turn an agent can make its expensive steps skip-on-retry with
    :meth:`once`: the first attempt records each finished step (the engine
    heartbeats it to Temporal), and a retried attempt of the same turn gets the
    recorded value back instead of doing the step again.
    """

    run_id: str = "local"
    """The workflow id of the run (several runs may share one in a user's workflow)."""
    execution_id: str = ""
    """Unique per run, even when one workflow runs several agents."""
    agent: str = "agent"
    turn: int = 1
    attempt: int = 1
    completed: Mapping[str, Any] = field(default_factory=dict)
    """Steps earlier attempts of this turn finished, by key (raw JSON values)."""
    checkpoint: Callable[[dict[str, Any]], None] = _no_checkpoint
    thread: Any = None
    """The turn's ``Thread`` (models continuing a service-backed thread read its cursor)."""
    event_sink: Callable[[Any], Awaitable[None]] = _no_events
    state: StateContext = field(default_factory=StateContext)
    """This agent's keyed state; changes commit when the turn succeeds."""
    resources: Mapping[str, Any] = field(default_factory=dict)
    """The worker's resources (``build_worker(resources=...)``), by name."""
    pending: list[PendingAction] = field(default_factory=list)
    """Questions this turn asked with :meth:`request_input`."""
    _recorded: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self._recorded = dict(self.completed)

    def idempotency_key(self, call_id: str) -> str:
        """A key for a tool call's side effect, the same on every attempt of this turn."""
        return f"{self.run_id}/{self.execution_id}/turn-{self.turn}/{call_id}"

    async def once(self, key: str, step: Callable[[], Awaitable[T]], result_type: type[T]) -> T:
        """Run ``step`` unless an earlier attempt of this turn already finished it."""
        adapter: TypeAdapter[T] = type_adapter(result_type)
        if key in self._recorded:
            return adapter.validate_python(self._recorded[key])
        value = await step()
        self.record({key: adapter.dump_python(value, mode="json")})
        return value

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
        id = f"input_{self.execution_id}_{self.turn}_{len(self.pending) + 1}"
        self.pending.append(PendingAction(id=id, kind="input", question=question))
        return id

    async def emit(self, event: Any) -> None:
        """Send an event to whoever watches the run live (``ratchet watch``,
        ``RunHandle.events()``): a ``RunEvent``, or any JSON-able value, which
        arrives as a ``custom`` event. Events are for watching; they are not
        kept in the thread, and a retried attempt of the turn sends its own."""
        await self.event_sink(event)
