"""A run's input and result, and the requests its workflow takes."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Literal, TypeVar, overload

from pydantic import BaseModel, Field, TypeAdapter
from temporalio.contrib.workflow_streams import WorkflowStreamState

from ratchet.errors import InvalidInputError
from ratchet.types import (
    AgentSession,
    AgentStatus,
    ExecutionRecord,
    Message,
    SparseModel,
    StateConflict,
    ThreadBase,
    ThreadData,
    Usage,
)

from ._options import RunOptions
from ._run_record import RunRecord

T = TypeVar("T")


class RunInput(BaseModel):
    """The workflow's input. ``session`` continues an earlier conversation;
    ``execution`` (with ``session``: model B) continues a run in progress."""

    agent: str
    messages: list[Message]
    session: AgentSession | None = None
    options: RunOptions = Field(default_factory=RunOptions)
    execution: ExecutionRecord | None = None
    parent_agent_id: str | None = None
    """Set for a sub-agent: the agent that called it."""
    parent_workflow_id: str | None = None
    stream: WorkflowStreamState | None = None
    """The live events carried over a continue-as-new."""
    depends_since: datetime | None = None
    """When the oldest closed run this run's thread relies on closed (set by a
    continue-as-new): it re-anchors a horizon after (``workflows._anchoring``)."""
    log_bytes: int = 0
    """About the JSON size of the log before this run's own messages."""
    previous_record: RunRecord | None = None
    """The turn marks and events index of the workflow run before this one (which
    continued as new); for readers of closed runs only (see ``wire._run_record``)."""


class RunResult(SparseModel):
    """How a run ended. The thread itself is not in it: ask the run's ``state``."""

    workflow_id: str
    agent: str
    status: AgentStatus
    final_response: Message | None = None
    usage: Usage = Usage()
    turns: int = 0
    session_id: str | None = None
    state_conflicts: list[StateConflict] = Field(default_factory=list)
    """Turns whose state changes were not committed because a key had moved on."""
    thread: ThreadData | None = Field(default=None, exclude=True)
    """The whole thread, for workflow code that called ``run_agent``; never serialised."""
    thread_end: ThreadBase | None = None
    """The whole thread by reference (its workflow, length, last message and id), for
    another run to continue from (a free-running rerun's next case)."""

    @property
    def output(self) -> str:
        return self.final_response.text if self.final_response else ""

    @property
    def output_value(self) -> Any:
        """``output`` as its JSON value when it is JSON (a typed answer, of an agent
        with an ``output_type``, always is), else its text: the ``output`` of the HTTP
        API's results and of ``ratchet run --json``."""
        try:
            return json.loads(self.output)
        except ValueError:
            return self.output

    @overload
    def output_as(self, output_type: type[T]) -> T: ...
    @overload
    def output_as(self, output_type: Any) -> Any: ...
    def output_as(self, output_type: Any) -> Any:
        """The answer of an agent with an ``output_type``, parsed and validated (its
        final message is the value's JSON). Raises ``pydantic.ValidationError``."""
        return TypeAdapter(output_type).validate_json(self.output)


def new_messages(prompt: str | Sequence[Message], make_id: Callable[[], str]) -> list[Message]:
    """Validate a prompt and give each message without an id one from ``make_id``."""
    messages = _as_messages(prompt)
    if not any(_has_content(m) for m in messages):
        raise InvalidInputError(
            "The prompt is empty: pass a non-empty string or at least one message with content."
        )
    for message in messages:
        message.id = message.id or make_id()
    return messages


def _as_messages(prompt: object) -> list[Message]:
    if isinstance(prompt, str):
        return [Message.user(prompt)] if prompt.strip() else []
    if isinstance(prompt, Sequence) and all(isinstance(m, Message) for m in prompt):
        return [m.model_copy() for m in prompt if isinstance(m, Message)]
    wrong = (
        prompt
        if not isinstance(prompt, Sequence)
        else next(m for m in prompt if not isinstance(m, Message))
    )
    raise InvalidInputError(
        f"A prompt must be a string or a list of ratchet.agents.Message; got "
        f"{type(wrong).__name__} {_short(wrong)}. Pass text as a str (e.g. str(value)) "
        "or build messages with Message.user(...)."
    )


def _has_content(message: Message) -> bool:
    return bool((message.content or "").strip() or message.tool_calls or message.parts)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


DecisionVerdict = Literal["approve", "reject", "answer"]
"""What a decision does: the Update that brings it (``approve``, ``reject``, ``provide_input``)."""


class DecisionRequest(SparseModel):
    """An ``approve`` / ``reject`` / ``provide_input`` Update's argument."""

    id: str
    """The pending call's id (or question's id), as ``pending()`` lists it."""
    reason: str | None = None
    answer: str | None = None
    by: str | None = None
    """Who decided, kept with the decision."""
    always: bool = False
    """With an approval: allow this tool without asking for the rest of the session."""


class ToolResultRequest(SparseModel):
    """A ``provide_tool_result`` Update's argument: what a client tool call returned."""

    call_id: str
    """The pending call's id, as ``pending()`` lists it."""
    content: str
    is_error: bool = False
    """The tool failed: ``content`` says how (the model reads it as an error)."""
    by: str | None = None
    """Who sent it, kept with the result in the audit trail."""
    message_id: str | None = None
    """The result's id in the thread (a client that holds it under an id of its own
    sends it); by default the workflow makes one."""


class StopRequest(SparseModel):
    """Stop a run at its next safe point, keeping every finished turn."""

    status: Literal["INTERRUPTED", "CANCELLED"] = "CANCELLED"
    reason: str | None = None
