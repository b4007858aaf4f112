"""Events a run sends to whoever watches it live.

A turn sends its own (``context.emit``, streamed text) while it works, one
signal per batch; the workflow sends the rest (status and what the run waits
for, turns started and completed, their tool calls and results, committed
state changes) exactly once, from what its history holds anyway. Every event names
its run, turn and, for events sent by a turn, the attempt: a retried turn sends
``retry`` before anything else, so a viewer drops what the failed attempt showed.

Watchers get one class per ``kind`` (``RunEvent`` is their union, discriminated
by ``kind``), each with its own typed ``data``::

    async for event in handle.events():
        match event:
            case TextDelta(text=text):
                print(text, end="")
            case ToolResult(data=ToolResultData(is_error=True)):
                print("a tool failed:", event.text)

On the wire every event has the same fields (``kind``, ``run_id``, ``agent``,
``turn``, ``attempt``, ``seq``, ``text``, ``data``), so events recorded before
the classes existed read as the classes.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from ._messages import Message, ToolCall
from ._sparse import SparseModel
from ._status import AgentStatus


class EventBase(SparseModel):
    """The fields every event has; each kind adds its ``kind`` and typed ``data``."""

    run_id: str = ""
    """The workflow id of the run the event belongs to (a session's run: its label)."""
    agent: str = ""
    turn: int = 0
    attempt: int = 0
    """For events a turn sent: its attempt (0: sent by the workflow)."""
    seq: int = 0
    """For events a turn sent: their order within the attempt, from 1."""
    text: str | None = None
    offset: int | None = Field(default=None, exclude=True)
    """The event's place in its run's (or session's) event stream, set on every event
    ``handle.events()`` yields: ``handle.events(after=event.offset)`` resumes right
    after it. The reader sets it; it is not part of the event on the wire."""


class RunStartedData(SparseModel):
    in_session: bool = False
    """The run is a session's and runs in the session's workflow (its events are
    all in the session's stream)."""
    execution_id: str | None = None
    """The run's execution id (its reply and tool result messages' ids derive from it:
    ``messages.reply_id``, ``messages.result_id``)."""
    request_id: str | None = None
    """A session's run: the request id of the send it runs."""


class StatusData(SparseModel):
    waiting: list[str] = Field(default_factory=list)
    """What the run waits for, one line each."""


class TurnCompletedData(SparseModel):
    tool_calls: list[str] = Field(default_factory=list)
    """The turn's tool calls, described (``weather(city="Oslo")``)."""
    tokens: int = 0
    final: bool = False


class ToolCallData(SparseModel):
    id: str
    name: str | None = None
    arguments: str | None = None
    """The call's JSON arguments, when under ``ARGUMENTS_LIMIT`` characters (the
    thread always holds them)."""


ARGUMENTS_LIMIT = 4_000


class ToolResultData(SparseModel):
    id: str | None = None
    """The id of the call it answers."""
    is_error: bool = False
    message_id: str | None = None
    """The result's id in the thread, when it has one already (a turn's own results
    get ``messages.result_id`` when the turn ends)."""


class StateChangedData(SparseModel):
    keys: dict[str, int | None] = Field(default_factory=dict)
    """Each changed key and its new version (``None``: deleted)."""
    by: str = ""
    """The agent whose turn made the change."""


class RunFinishedData(SparseModel):
    status: AgentStatus


class RunStarted(EventBase):
    """A run started; ``text`` is its agent."""

    kind: Literal["run_started"] = "run_started"
    data: RunStartedData | None = None


class StatusChanged(EventBase):
    """The run's status changed; ``text`` is the new status."""

    kind: Literal["status"] = "status"
    data: StatusData | None = None

    @property
    def status(self) -> AgentStatus:
        return AgentStatus(self.text)

    @property
    def waiting(self) -> list[str]:
        return self.data.waiting if self.data is not None else []


class TurnStarted(EventBase):
    kind: Literal["turn_started"] = "turn_started"
    data: None = None


class TurnCompleted(EventBase):
    """A turn's result is checkpointed; ``text`` is the final answer, if it gave one."""

    kind: Literal["turn_completed"] = "turn_completed"
    data: TurnCompletedData = Field(default_factory=TurnCompletedData)


class ToolCalled(EventBase):
    """The model called a tool; ``text`` describes the call."""

    kind: Literal["tool_call"] = "tool_call"
    data: ToolCallData | None = None


class ToolResult(EventBase):
    """A tool call's result; ``text`` is its first 200 characters."""

    kind: Literal["tool_result"] = "tool_result"
    data: ToolResultData = Field(default_factory=ToolResultData)


class StateChangedEvent(EventBase):
    """A turn's state changes were committed; ``text`` lists the keys."""

    kind: Literal["state_changed"] = "state_changed"
    data: StateChangedData = Field(default_factory=StateChangedData)


class RunFinished(EventBase):
    """A session's run ended; ``text`` is its answer (or error), cut at 4,000 characters."""

    kind: Literal["run_finished"] = "run_finished"
    data: RunFinishedData | None = None

    @property
    def status(self) -> AgentStatus | None:
        return self.data.status if self.data is not None else None


class Retry(EventBase):
    """An earlier attempt of this turn failed: drop the text and custom events it
    showed (its tool calls and results stand)."""

    kind: Literal["retry"] = "retry"
    data: None = None


class TextDelta(EventBase):
    """Streamed text of the model's reply."""

    kind: Literal["text_delta"] = "text_delta"
    data: None = None


class CustomEvent(EventBase):
    """What an agent or tool sent with ``context.emit``."""

    kind: Literal["custom"] = "custom"
    data: Any = None


RunEvent = Annotated[
    RunStarted
    | StatusChanged
    | TurnStarted
    | TurnCompleted
    | ToolCalled
    | ToolResult
    | StateChangedEvent
    | RunFinished
    | Retry
    | TextDelta
    | CustomEvent,
    Field(discriminator="kind"),
]
"""Any event, as a watcher receives it: the class for its ``kind``."""


EXCERPT = 200
"""Characters of a tool's result a ``ToolResult`` shows."""


def excerpt(text: str, limit: int = EXCERPT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tool_called(call: ToolCall) -> ToolCalled:
    """The event for a tool call (run, pending or refused)."""
    arguments = call.arguments if len(call.arguments) <= ARGUMENTS_LIMIT else None
    data = ToolCallData(id=call.id, name=call.name, arguments=arguments)
    return ToolCalled(text=call.describe(), data=data)


def tool_answered(message: Message) -> ToolResult:
    """The event for a tool's result (a ``tool`` message)."""
    data = ToolResultData(
        id=message.tool_call_id, is_error=message.is_error, message_id=message.id or None
    )
    return ToolResult(text=excerpt(message.text), data=data)


def as_event(value: Any) -> EventBase:
    """An event as given, or any JSON-able value wrapped as a ``CustomEvent``."""
    return value if isinstance(value, EventBase) else CustomEvent(data=value)
