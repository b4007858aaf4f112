"""The conversation an AG-UI client sends, read against the session's thread.

AG-UI clients send the whole conversation on every run. The session decides what
is new by message id: the thread's ids are the ones it streamed (see
``agui_events``), so a client holds every message it saw under the thread's id.
What a client may add is its user messages, and results for the frontend tool
calls its run waits for; everything else it sends is the session's own making.

A client may be behind: it may lack messages the agent made (it stopped a run
before the end, or another tab went on), and it may hold a reply the thread does
not keep (the turn that streamed it was retried or stopped) or not yet (the run
still goes). Neither is a conflict. A history that reorders the thread's
messages, or sends new ones where they would not follow the whole thread (before
held ones, or with some of its user messages left out), is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ag_ui.core import Message as AguiMessage

from ratchet.errors import ConversationConflictError, InvalidInputError
from ratchet.types import Message


@dataclass
class Sent:
    """What a run's input brings that the session does not hold."""

    new: list[Message] = field(default_factory=list[Message])
    """User messages to send, in order."""
    results: list[Message] = field(default_factory=list[Message])
    """Results of frontend tool calls the session waits for (``tool`` messages)."""
    unheld: bool = False
    """It holds a reply the thread does not (yet): a part of one it streamed."""


def read(sent: list[AguiMessage], held: list[Message], waiting: set[str]) -> Sent:
    """The new user messages and frontend tool results in ``sent``, checked against
    the thread ``held`` and the frontend tool calls ``waiting`` for a result. Raises
    ``ConversationConflictError`` for a history that does not continue the thread and
    ``InvalidInputError`` for a message a client cannot add."""
    position = {m.id: n for n, m in enumerate(held)}
    seen = [m for m in sent if m.id in position]
    _check_order(seen, position, held)
    last_seen = max((n for n, m in enumerate(sent) if m.id in position), default=-1)
    unheld = {m.id for m in sent if m.id not in position and m.role == "assistant"}
    stale_calls = {
        call.id
        for m in sent
        if m.role == "assistant" and m.id in unheld
        for call in m.tool_calls or []
    }
    answered = {m.tool_call_id for m in held if m.role == "tool" and m.tool_call_id}
    called = {c.id for m in held for c in m.tool_calls}
    out = Sent(unheld=bool(unheld))
    for n, m in enumerate(sent):
        if m.id in position or m.id in unheld:
            continue  # held, or a reply the session made and keeps under no id of this client
        if m.role == "user":
            if n < last_seen:
                raise ConversationConflictError(
                    f"Message {m.id!r} is new to this thread but comes before messages it "
                    "holds; new messages must follow the whole thread (read it from the last "
                    "MESSAGES_SNAPSHOT)."
                )
            out.new.append(_user(m))
        elif m.role == "tool":
            result = _result(m, waiting, answered, called, stale_calls)
            if result is not None:
                out.results.append(result)
        else:
            raise InvalidInputError(
                f"Message {m.id!r}: a client adds user messages and the results of frontend "
                f"tool calls, not {m.role} messages."
            )
    seen_ids = {m.id for m in seen}  # once: a long thread is thousands of messages
    missing = [m for m in held if m.role == "user" and m.id not in seen_ids]
    if out.new and missing:  # (a run sent again may lack what came after it)
        raise ConversationConflictError(
            f"The history sent lacks {len(missing)} of this thread's user messages (the "
            f"first: {missing[0].id!r}), so new messages would not follow what it shows. Send "
            "the thread as the last MESSAGES_SNAPSHOT gave it, with new messages after it."
        )
    return out


def _check_order(seen: list[AguiMessage], position: dict[str, int], held: list[Message]) -> None:
    """The held messages sent must be in the thread's order."""
    at = [position[m.id] for m in seen]
    for n in range(1, len(at)):
        if at[n] <= at[n - 1]:
            raise ConversationConflictError(
                f"The messages sent do not match this thread's from message {at[n] + 1} on "
                f"({held[at[n]].id!r} comes before {held[at[n - 1]].id!r} in the thread). Send "
                "the thread as the last MESSAGES_SNAPSHOT gave it, with new messages after it."
            )


def _user(m: AguiMessage) -> Message:
    if not isinstance(m.content, str):
        raise InvalidInputError(
            f"Message {m.id!r}: only text content can be sent (attachments are not supported)."
        )
    return Message(role="user", content=m.content, id=m.id)


def _result(
    m: AguiMessage, waiting: set[str], answered: set[str], called: set[str], stale: set[str]
) -> Message | None:
    """A frontend tool's result, or ``None`` for the client's copy of a result the
    session made for a reply it did not keep."""
    call_id = getattr(m, "tool_call_id", "")
    if call_id in waiting:
        content = m.content if isinstance(m.content, str) else None
        if content is None:
            raise InvalidInputError(
                f"Message {m.id!r}: a tool result is sent as text (content parts are not "
                "supported)."
            )
        error = getattr(m, "error", None)
        text = f"Error: {error}" if error and not content else content
        return Message(
            role="tool", content=text, tool_call_id=call_id, id=m.id, is_error=bool(error)
        )
    if call_id in stale:
        return None
    if call_id in answered:
        raise InvalidInputError(
            f"Message {m.id!r} answers tool call {call_id!r}, which this thread has answered "
            "already; a call takes one result."
        )
    if call_id in called:
        raise InvalidInputError(
            f"Message {m.id!r} answers tool call {call_id!r}, a call of one of the agent's own "
            "tools; a client sends results only for the frontend tools it offered."
        )
    raise InvalidInputError(
        f"Message {m.id!r} answers tool call {call_id!r}, which is not a call of this "
        "thread; nothing waits for it."
    )
