"""Spans: the pieces of a thread's working view, and how a view is written.

A view (``ratchet.types.views``) is a list of spans of a thread's log; every
turn's input carries one, so it is written as one short string. Below both the
thread data that holds a view (``state``) and the functions that compute views
(``views``).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, model_serializer, model_validator

from ._sparse import SparseModel


class Span(SparseModel):
    """Messages ``start`` to ``end`` (exclusive; ``None``: to the end) of a thread's
    log, as one piece of its working view.

    Written as a string, ``"688-694"``, ``"767-"`` (to the end) or ``"694-695!"``
    (dropped tool results): a fitted view has a span per trimmed tool result, and
    every turn's input carries the view."""

    start: int
    end: int | None = None
    drop: bool = False
    """Tool results in this span are shown as a one-line note (compaction)."""

    @model_serializer(mode="plain")
    def written(self) -> str:
        """The span as it is written: ``"688-694"``, ``"767-"``, ``"694-695!"``."""
        end = "" if self.end is None else str(self.end)
        return f"{self.start}-{end}{'!' if self.drop else ''}"

    @model_validator(mode="before")
    @classmethod
    def _read(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        drop = value.endswith("!")
        start, _, end = value.removesuffix("!").partition("-")
        return {"start": int(start), "end": int(end) if end else None, "drop": drop}


def whole_log() -> list[Span]:
    """The view of a whole log."""
    return [Span(start=0)]


def _write_view(spans: list[Span]) -> str:
    """A view as one string: ``"0-1,186-,!190,!198"`` is messages 0 and 186 on,
    with the tool results at 190 and 198 dropped. A fitted view drops a tool result
    every few turns; as spans, each drop would split its range in three."""
    items: list[str] = []
    group: list[Span] = []
    for span in spans:
        if group and not _joins(group[-1], span):
            items += _group(group)
            group = []
        group.append(span)
    return ",".join(items + _group(group))


def _joins(last: Span, span: Span) -> bool:
    """``span`` goes on ``last``'s range: it starts where ``last`` ends, and one of
    the two is a drop (two kept spans side by side stay apart, as written)."""
    return last.end == span.start and (last.drop or span.drop)


def _group(group: list[Span]) -> list[str]:
    drops = [span for span in group if span.drop]
    if len(drops) in (0, len(group)) or (group[-1].end is None and group[-1].drop):
        return [span.written() for span in group]
    whole = Span(start=group[0].start, end=group[-1].end).written()
    return [
        whole,
        *(f"!{d.start}" if d.end == d.start + 1 else f"!{d.start}-{d.end}" for d in drops),
    ]


def _read_view(value: Any) -> Any:
    if not isinstance(value, str):
        return value  # a list of spans
    spans: list[Span] = []
    kept: Span | None = None
    drops: list[Span] = []
    for item in value.split(",") if value else []:
        if item.startswith("!"):
            start, _, end = item[1:].partition("-")
            drops.append(Span(start=int(start), end=int(end) if end else int(start) + 1, drop=True))
            continue
        spans += _split(kept, drops)
        kept, drops = Span.model_validate(item), []
    return spans + _split(kept, drops)


def _split(kept: Span | None, drops: list[Span]) -> list[Span]:
    """A range written whole with the drops inside it, as spans again."""
    if kept is None:
        return []
    if not drops or kept.drop:
        return [kept]
    out: list[Span] = []
    at = kept.start
    for drop in drops:
        if drop.start > at:
            out.append(Span(start=at, end=drop.start))
        out.append(drop)
        at = drop.end or at
    if kept.end is None or at < kept.end:
        out.append(Span(start=at, end=kept.end))
    return out


View = Annotated[
    list[Span], PlainSerializer(_write_view, return_type=str), BeforeValidator(_read_view)
]
"""The spans of a log that a turn sends, written as one string (``_write_view``)."""
