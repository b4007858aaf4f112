"""Ratchet's run events as AG-UI events (``ag-ui-protocol`` 1.0).

One ``Translation`` per AG-UI run: it turns each event of the session's stream
into the AG-UI events it stands for, keeping the protocol's order rules (a text
message is started before its content and ended before anything else, a tool
call is started, given its arguments and ended before its result or an approval
that concerns it). Text streams under the id the thread keeps the reply under
(``messages.reply_id``), tool calls under that message and results under their
own thread ids (``messages.result_id``), so a client that stopped mid-reply holds
what it got under the ids the thread knows. A retried attempt streams its reply
again under the same id: the ``retry`` is followed by a ``MESSAGES_SNAPSHOT`` of
the thread, which drops what the lost attempt showed; the ``MESSAGES_SNAPSHOT`` at
the end of the run replaces whatever was streamed with the thread as the session
holds it.

State is the session agent's keyed state, the keys kept as JSON (other
serializers are not shown): a ``STATE_SNAPSHOT`` when the run starts and a
``STATE_DELTA`` (JSON Patch) after each committed change.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    CustomEvent,
    FunctionCall,
    Interrupt,
    StateDeltaEvent,
    SystemMessage,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
    UserMessage,
)
from ag_ui.core import (
    Message as AguiMessage,
)
from ag_ui.core import (
    ToolCall as AguiToolCall,
)

from ratchet.client import StateExport
from ratchet.types import (
    Message,
    PendingView,
    Retry,
    RunEvent,
    RunStarted,
    TextDelta,
    ToolCall,
    ToolCalled,
    ToolResult,
    TurnCompleted,
    question_id,
    question_of,
    reply_id,
    result_id,
)


class Translation:
    """The AG-UI events of one run, from the session's events as they come."""

    def __init__(
        self,
        session_id: str,
        run_label: str | None,
        *,
        request_id: str | None = None,
        execution_id: str | None = None,
    ) -> None:
        self.run_label = run_label
        """The Ratchet run followed (``<session>-run-<n>``); ``None``: the one that
        starts with ``request_id``."""
        self.request_id = request_id
        self.execution_id = execution_id
        """The followed run's (its messages' ids derive from it)."""
        self.calls: dict[str, ToolCall] = {}
        """The tool calls seen, by id, in order."""
        self.answered: dict[str, str] = {}
        """The calls whose results were seen: their results' ids in the thread."""
        self.turns: list[TurnCompleted] = []
        """The turns seen completing."""
        self.sent_results: set[str] = set()
        """Calls whose results the client sent with this run: it holds them already."""
        self.streamed: dict[str, str] = {}
        """What the client got of each message, by id: text, or a tool result."""
        self.retried = False
        """A turn was retried: what the lost attempt streamed is in ``streamed``."""
        self._session_id = session_id
        self._text: str | None = None  # the message being streamed
        self._started: set[str] = set()  # tool calls already started

    def mine(self, event: RunEvent) -> bool:
        if self.run_label is None and isinstance(event, RunStarted):
            data = event.data
            if data is not None and data.request_id == self.request_id:
                self.run_label = event.run_id
        if self.run_label is None:
            return False
        # Turns of 0.1.0 stamped their events with the session's id (a session runs
        # one run at a time): a stream a session carries from then may hold some.
        legacy = bool(event.attempt) and event.run_id == self._session_id
        return event.run_id == self.run_label or legacy

    def reply_id(self, turn: int) -> str:
        """The thread's id of the reply of ``turn`` of this run."""
        return reply_id(self.execution_id or self.run_label or "", turn)

    def note(self, event: RunEvent) -> None:
        """Keep what the run's ending reports (its calls, results and turns) from an
        event streamed in an earlier response."""
        if isinstance(event, RunStarted) and event.data is not None:
            self.execution_id = event.data.execution_id or self.execution_id
        elif isinstance(event, ToolCalled) and event.data is not None:
            call = ToolCall(
                id=event.data.id, name=event.data.name or "", arguments=event.data.arguments or ""
            )
            self.calls.setdefault(call.id, call)
        elif isinstance(event, ToolResult) and event.data.id is not None:
            self.answered[event.data.id] = event.data.message_id or result_id(
                self.execution_id or self.run_label or "", event.data.id
            )
        elif isinstance(event, TurnCompleted):
            self.turns.append(event)

    def events(self, event: RunEvent) -> Iterator[BaseEvent]:
        self.note(event)
        if isinstance(event, TextDelta) and event.text:
            message_id = self.reply_id(event.turn)
            if self._text != message_id:
                yield from self.end_text()
                self._text = message_id
                yield TextMessageStartEvent(message_id=message_id, role="assistant")
            yield TextMessageContentEvent(message_id=message_id, delta=event.text)
            self.streamed[message_id] = self.streamed.get(message_id, "") + event.text
            return
        yield from self.end_text()
        if isinstance(event, ToolCalled) and event.data is not None:
            name, arguments = event.data.name, event.data.arguments
            call = ToolCall(id=event.data.id, name=name or "", arguments=arguments or "")
            yield from self.call(call, event.turn)
        elif (
            isinstance(event, ToolResult)
            and event.data.id is not None
            and event.data.id not in self.sent_results
        ):
            yield self.result(self.answered[event.data.id], event.data.id, event.text or "")
        elif isinstance(event, Retry):
            self.retried = True
            yield CustomEvent(
                name="ratchet.retry", value={"turn": event.turn, "attempt": event.attempt}
            )

    def call(self, call: ToolCall, turn: int | None = None) -> Iterator[BaseEvent]:
        """A tool call, once: started (under its turn's reply), its arguments, ended."""
        if call.id in self._started:
            return
        self._started.add(call.id)
        parent = self.reply_id(turn) if turn else None
        yield from self.started_call(call, parent)

    def started_call(self, call: ToolCall, parent: str | None) -> Iterator[BaseEvent]:
        """A tool call under the message ``parent``: started, its arguments, ended."""
        self._started.add(call.id)
        if parent is not None:
            self.streamed.setdefault(parent, "")
        yield ToolCallStartEvent(
            tool_call_id=call.id, tool_call_name=call.name or "tool", parent_message_id=parent
        )
        if call.arguments:
            yield ToolCallArgsEvent(tool_call_id=call.id, delta=call.arguments)
        yield ToolCallEndEvent(tool_call_id=call.id)

    def result(self, message_id: str, call_id: str, content: str) -> ToolCallResultEvent:
        """A tool call's result, as the thread keeps it under ``message_id``."""
        self.streamed[message_id] = content
        return ToolCallResultEvent(
            message_id=message_id, tool_call_id=call_id, content=content, role="tool"
        )

    def started(self, call_id: str) -> bool:
        """Whether the client got the tool call ``call_id``."""
        return call_id in self._started

    def end_text(self) -> Iterator[BaseEvent]:
        if self._text is not None:
            yield TextMessageEndEvent(message_id=self._text)
            self._text = None


def interrupts(pending: list[PendingView]) -> list[Interrupt]:
    """What the run waits for, as interrupts a following run's ``resume`` answers."""
    found: list[Interrupt] = []
    for view in pending:
        action = view.action
        expires = view.deadline.isoformat() if view.deadline is not None else None
        if action.kind == "input":
            found.append(_question(action.id, action.question, expires))
        elif action.kind == "approval" and action.call is not None:
            found.append(_approval(action.call, expires))
    return found


def interrupts_then(waiting: list[str], run: Translation) -> list[Interrupt]:
    """What a run waited for when it sent a status event with the lines ``waiting``,
    from its events (once answered, nothing else holds it): each line matched to a
    call the run made and had no result for; a question asked without a call
    (``request_input``) gets the id the turn asked it under."""
    open_calls = [c for c in run.calls.values() if c.id not in run.answered]
    turn = run.turns[-1].turn if run.turns else 0
    found: list[Interrupt] = []
    asked = 0
    for line in waiting:
        kind, _, what = line.partition(": ")
        if kind == "question":
            call = next((c for c in open_calls if c.name and question_of(c) == what), None)
            if call is None:
                asked += 1
            id_ = call.id if call else question_id(run.execution_id or "", turn, asked)
            found.append(_question(id_, what, None))
        elif call := next((c for c in open_calls if line == f"{kind}: {c.describe()}"), None):
            found.append(_approval(call, None))
    return found


def client_calls_then(waiting: list[str], run: Translation) -> list[str]:
    """The client tool calls a run waited for when it sent a status event with the
    lines ``waiting`` (as ``interrupts_then``)."""
    open_calls = [c for c in run.calls.values() if c.id not in run.answered]
    return [
        call.id
        for line in waiting
        if (call := next((c for c in open_calls if line == f"client: {c.describe()}"), None))
    ]


def _question(id_: str, question: str | None, expires: str | None) -> Interrupt:
    return Interrupt(
        id=id_,
        reason="input",
        message=question,
        response_schema={"type": "string"},
        expires_at=expires,
    )


def _approval(call: ToolCall, expires: str | None) -> Interrupt:
    return Interrupt(
        id=call.id,
        reason="approval",
        message=f"Approve {call.describe(200)}?",
        tool_call_id=call.id,
        response_schema=APPROVAL_SCHEMA,
        expires_at=expires,
    )


APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
}


def messages(thread: list[Message]) -> list[AguiMessage]:
    """The session's thread as AG-UI messages, with the thread's own ids (a client
    sends them back on its next run, and they are recognised as held)."""
    out: list[AguiMessage] = []
    for m in thread:
        if m.role == "user":
            out.append(UserMessage(id=m.id, content=m.content or ""))
        elif m.role == "assistant":
            calls = [
                AguiToolCall(id=c.id, function=FunctionCall(name=c.name, arguments=c.arguments))
                for c in m.tool_calls
            ]
            out.append(AssistantMessage(id=m.id, content=m.content, tool_calls=calls or None))
        elif m.role == "tool":
            out.append(
                ToolMessage(
                    id=m.id,
                    content=m.content or "",
                    tool_call_id=m.tool_call_id or "",
                    error=m.content if m.is_error else None,
                )
            )
        else:
            out.append(SystemMessage(id=m.id, content=m.content or ""))
    return out


def state_of(export: StateExport, agent: str) -> dict[str, Any]:
    """The agent's keys held as JSON, by key."""
    for agent_state in export.agents:
        if agent_state.agent == agent:
            entries = agent_state.entries.items()
            return {key: entry.data for key, entry in entries if entry.serializer == "json"}
    return {}


def delta(before: dict[str, Any], after: dict[str, Any]) -> StateDeltaEvent | None:
    """A JSON Patch from ``before`` to ``after`` (top-level keys), or ``None``."""
    ops: list[dict[str, Any]] = []
    for key in before.keys() - after.keys():
        ops.append({"op": "remove", "path": _pointer(key)})
    for key, value in after.items():
        if key not in before:
            ops.append({"op": "add", "path": _pointer(key), "value": value})
        elif _json(before[key]) != _json(value):
            ops.append({"op": "replace", "path": _pointer(key), "value": value})
    return StateDeltaEvent.model_validate({"type": "STATE_DELTA", "delta": ops}) if ops else None


def _pointer(key: str) -> str:
    return "/" + key.replace("~", "~0").replace("/", "~1")


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)
