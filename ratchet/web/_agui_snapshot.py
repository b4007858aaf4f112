"""How a run's response leaves the client holding the thread: the fewest events.

``@ag-ui/client`` replaces its messages with a ``MESSAGES_SNAPSHOT``'s, so a
snapshot holds the whole thread (4 MB at 2,000 messages). It is needed only where
what the client holds differs from the thread otherwise than by messages it lacks
at the end: it sent a history other than the thread's (it was behind, or holds a
reply the thread does not keep), or a message it got was streamed otherwise than
the thread keeps it (a retried turn, a final text other than its deltas). Where the
client holds the thread up to this run and got this run's messages as the thread
keeps them, the messages it lacks (a reply that was not streamed, a result) are
sent as the events that make them, and no snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence

from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolMessage,
)
from ag_ui.core import Message as AguiMessage

from ratchet.types import Message, ToolCall

from ._agui_events import Translation, messages


def catch_up(
    sent: Sequence[AguiMessage], thread: Sequence[Message], run: Translation
) -> list[BaseEvent] | None:
    """The events that bring a client that sent ``sent`` and got what ``run``
    streamed to ``thread``; ``None`` where only a snapshot can."""
    if run.retried or [m.id for m in thread[: len(sent)]] != [m.id for m in sent]:
        return None
    out: list[BaseEvent] = []
    for m in messages(list(thread[len(sent) :])):
        if m.id in run.streamed:
            if not _as_streamed(m, run):
                return None
        elif isinstance(m, AssistantMessage):
            out.extend(_made(m, run))
        elif isinstance(m, ToolMessage) and isinstance(m.content, str):
            out.append(run.result(m.id, m.tool_call_id, m.content))
        else:
            return None  # a user or system message the client lacks: a snapshot
    return out


def _as_streamed(m: AguiMessage, run: Translation) -> bool:
    """Whether the client got ``m`` as the thread keeps it."""
    got = run.streamed[m.id]
    if isinstance(m, AssistantMessage):
        calls = m.tool_calls or []
        return (m.content or "") == got and all(run.started(c.id) for c in calls)
    return isinstance(m, ToolMessage) and m.content == got


def _made(m: AssistantMessage, run: Translation) -> list[BaseEvent]:
    """A reply the client did not get: its text, then its tool calls."""
    out: list[BaseEvent] = []
    if m.content:
        out.append(TextMessageStartEvent(message_id=m.id, role="assistant"))
        out.append(TextMessageContentEvent(message_id=m.id, delta=m.content))
        out.append(TextMessageEndEvent(message_id=m.id))
    run.streamed[m.id] = m.content or ""
    for c in m.tool_calls or []:
        if not run.started(c.id):
            call = ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments)
            out.extend(run.started_call(call, m.id))
    return out
