"""What a workflow run leaves in its own history as it ends, for readers of closed
runs: its turn marks (for forks) and where its events are (for event readers).

A query to a closed run needs a worker that can replay it: one of the build it
ran on, with its code unchanged. A closed run's history needs nothing, so each
run writes, at continue-as-new (in the next run's input) and at close (in its
result), what its history does not already hold: the turn marks, and the events
the workflow published itself. Events that arrived by signal (a turn's streamed
events) are in history already; the index counts them in place.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from ratchet.types import Message, PromptSize, SparseModel, StateEntry, ToolCall, View, whole_log

MARK_BYTES_KEPT = 512 * 1024
"""About the most a run's record holds of turn marks; past it the oldest marks are
dropped (a fork at one of their turns asks the run by query, which needs a worker)."""
TEXT_BY_REFERENCE = 256
"""An event's text longer than this that is a message's (a final answer) is kept
by the message's id: the log holds the text already."""
EVENT_BYTES_KEPT = 256 * 1024
"""About the most a run's record holds of the events its workflow published itself;
past it the oldest events are dropped (as the stream itself keeps only its latest)."""


class TurnMark(SparseModel):
    """A run or session after one of its turns: what a fork or checkpoint starts from."""

    turn: int
    """Counted across the whole session (or run), from 1 (0: before its first)."""
    length: int
    """Messages in the log after the turn."""
    last_id: str | None = None
    view: View = Field(default_factory=whole_log)
    cursor: str | None = None
    agent: str
    state: dict[str, StateEntry] = Field(default_factory=dict)
    open_calls: list[ToolCall] = Field(default_factory=list)
    """Tool calls of the turn whose results were not in the log yet."""
    prompt: PromptSize | None = None
    """The turn's prompt as its model counted it (a fork's count starts from it)."""


class EventIndex(SparseModel):
    """Where a closed workflow run's events (stream offsets ``start`` to ``end``) are
    in its history: the run's publish signals hold some, the index the rest."""

    start: int
    """Offset of the first event indexed."""
    end: int
    """Offset after the run's last event."""
    skip: int = 0
    """Items of the run's accepted publish signals before ``start`` (dropped by the
    bound, ``EVENT_BYTES_KEPT``)."""
    entries: list[int | str | list[int | str]] = Field(default_factory=list)
    """In offset order: a number, that many items of the run's accepted publish
    signals, in history order; a string, an event the workflow published itself
    (its JSON); a list ``[message_id, json, limit]``, such an event whose text is
    that of a message of the run's log (a turn's final answer), cut to ``limit``
    characters as ``agents._events.excerpt`` cuts (0: whole), stored without it."""


class RunRecord(SparseModel):
    """What a workflow run leaves in its history for readers of closed runs, beside
    its log index (see the module's docstring)."""

    thread_id: str | None = None
    thread_kind: str = "messages"
    """The thread the marks are of (a run's input may not name it: its first run
    makes it)."""
    turns_from: int = 0
    """The turn the run started at (its first mark's, before any was dropped)."""
    marks: list[TurnMark] = Field(default_factory=list)
    """The run's turn marks, oldest first; a mark listed in ``same_state`` is stored
    without its state, which is the mark's before it."""
    same_state: list[int] = Field(default_factory=list)
    """Indexes in ``marks`` whose state equals the mark's before it."""
    events: EventIndex | None = None
    """``None``: the run's events are not indexed (a workflow of another kind)."""

    def full_marks(self) -> list[TurnMark]:
        """``marks`` with every state filled in."""
        same, marks = set(self.same_state), list(self.marks)
        for at in range(1, len(marks)):
            if at in same:
                marks[at] = marks[at].model_copy(update={"state": marks[at - 1].state})
        return marks


def compact_marks(marks: Sequence[TurnMark]) -> RunRecord:
    """A record of ``marks``, each state stored once while it does not change, the
    oldest marks dropped past ``MARK_BYTES_KEPT``."""
    kept, total = len(marks), 0
    while kept > 0:
        mark = marks[kept - 1]
        same = kept > 1 and mark.state == marks[kept - 2].state
        size = len((mark.model_copy(update={"state": {}}) if same else mark).model_dump_json())
        if total + size > MARK_BYTES_KEPT:
            break
        total, kept = total + size, kept - 1
    chosen = list(marks[kept:])
    same_state: list[int] = []
    stored: list[TurnMark] = []
    for at, mark in enumerate(chosen):
        if at > 0 and mark.state and mark.state == chosen[at - 1].state:
            same_state.append(at)
            mark = mark.model_copy(update={"state": {}})
        stored.append(mark)
    first = marks[0].turn if marks else 0
    return RunRecord(turns_from=first, marks=stored, same_state=same_state)


def find_mark(
    marks: Sequence[TurnMark],
    *,
    turn: int | None,
    message: str | None,
    messages: Sequence[Message],
    offset: int,
    turns_from: int | None = None,
) -> tuple[TurnMark | None, bool]:
    """The mark of one workflow run after turn ``turn`` (or after the turn that added
    message ``message``; neither: the latest), settled; and whether an earlier run
    holds it instead. ``messages``: the run's part of the log, from position
    ``offset``; ``turns_from``: the turn the run started at, when ``marks`` may
    lack its oldest."""
    first = turns_from if turns_from is not None else marks[0].turn
    if message is not None:
        where = next((offset + i for i, m in enumerate(messages) if m.id == message), None)
        if where is None:
            return None, True
        found = next((m for m in marks if m.length > where), None)
        return settled(found, messages, offset), False
    if turn is None:
        return settled(marks[-1], messages, offset), False
    if turn < first:
        return None, True
    # The latest with that number: a failed run of a session is rolled back, and the
    # next run's turns take its numbers (marks count the session's turns).
    found = next((m for m in reversed(marks) if m.turn == turn), None)
    return settled(found, messages, offset), False


def settled(mark: TurnMark | None, messages: Sequence[Message], offset: int) -> TurnMark | None:
    """The mark with the results settled for its open tool calls (approvals, durable
    tools), which the log holds right after it, when it has them."""
    if mark is None or not mark.open_calls:
        return mark
    open_ids = {c.id for c in mark.open_calls}
    position, last_id = mark.length, mark.last_id
    while 0 <= position - offset < len(messages):
        message = messages[position - offset]
        if message.role != "tool" or message.tool_call_id not in open_ids:
            break
        open_ids.discard(message.tool_call_id)
        position, last_id = position + 1, message.id
    calls = [c for c in mark.open_calls if c.id in open_ids]
    return mark.model_copy(update={"length": position, "last_id": last_id, "open_calls": calls})


def holds_turn(record: RunRecord, turn: int | None) -> bool:
    """Whether the record's marks reach back to ``turn`` (``None``: the latest)."""
    return bool(record.marks) and (turn is None or turn >= record.marks[0].turn)
