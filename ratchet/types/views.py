"""Working views of a thread log: what an agent sees of a long conversation.

A session keeps every message it ever had in one append-only log (positions 0,
1, 2, ...), written to history once. What the agent is given each turn is a
*view* of that log: a list of ``Span``s. A fresh session's view is the whole
log; compaction and a failed send change only the view, never the log, so the
full conversation stays readable (and forkable) at every point.

The last span of a view is open (``end=None``): messages appended later join the
view by themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from ._messages import Message
from ._spans import Span


def normalize(spans: Iterable[Span]) -> list[Span]:
    """Drop empty spans and merge neighbours that continue each other."""
    out: list[Span] = []
    for span in spans:
        if span.end is not None and span.end <= span.start:
            continue
        last = out[-1] if out else None
        if last is not None and last.end == span.start and last.drop == span.drop:
            out[-1] = Span(start=last.start, end=span.end, drop=span.drop)
        else:
            out.append(span)
    return out


def positions(view: Sequence[Span], upto: int) -> list[tuple[int, bool]]:
    """The log positions the view shows among the first ``upto``, in order, each
    with whether its tool result is dropped."""
    out: list[tuple[int, bool]] = []
    for span in view:
        end = upto if span.end is None else min(span.end, upto)
        out.extend((p, span.drop) for p in range(span.start, end))
    return out


def ranges(view: Sequence[Span], upto: int) -> list[tuple[int, int]]:
    """The position ranges of the log the view needs (sorted, merged)."""
    pieces = sorted(
        (s.start, upto if s.end is None else min(s.end, upto)) for s in view if s.start < upto
    )
    merged: list[tuple[int, int]] = []
    for start, end in pieces:
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def render(
    view: Sequence[Span], upto: int, message_at: Callable[[int], Message]
) -> tuple[list[Message], list[tuple[int, bool]]]:
    """The messages the view shows among the first ``upto`` of the log, and their
    positions (with the drop flag)."""
    shown = positions(view, upto)
    return materialize(shown, message_at), shown


def materialize(
    shown: Iterable[tuple[int, bool]], message_at: Callable[[int], Message]
) -> list[Message]:
    """The messages at these log positions, tool results dropped where flagged."""
    return [dropped(message_at(p)) if drop else message_at(p) for p, drop in shown]


def spans_of(shown: Iterable[tuple[int, bool]]) -> list[Span]:
    return normalize(Span(start=p, end=p + 1, drop=drop) for p, drop in shown)


def without(view: Sequence[Span], start: int, end: int) -> list[Span]:
    """The view with log positions ``start`` to ``end`` left out (a failed send's
    messages); messages appended after ``end`` still join it."""
    out: list[Span] = []
    for span in view:
        stop = span.end
        if (stop is not None and stop <= start) or span.start >= end:
            out.append(span)
            continue
        if span.start < start:
            out.append(Span(start=span.start, end=start, drop=span.drop))
        if stop is None or stop > end:
            out.append(Span(start=end, end=stop, drop=span.drop))
    if not out or out[-1].end is not None:
        out.append(Span(start=end))
    return normalize(out)


def view_of(shown: Iterable[tuple[int, bool]], version: int, note: int | None = None) -> list[Span]:
    """The view for the turn that starts at log position ``version``: the messages
    ``shown`` (the note at log position ``note`` among them, if any), then
    everything from ``version`` on (the note excepted)."""
    tail = [Span(start=version)]
    if note is not None:
        tail = [Span(start=version, end=note), Span(start=note + 1)]
    return normalize([*spans_of(shown), *tail])


def dropped(message: Message) -> Message:
    """A tool result as compaction leaves it: a one-line note of its size."""
    if message.role != "tool" or (message.content or "").startswith("[tool result dropped"):
        return message
    note = f"[tool result dropped to save context: {len(message.content or ''):,} characters]"
    return message.model_copy(update={"content": note})
