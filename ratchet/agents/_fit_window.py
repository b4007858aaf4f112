"""FitWindow: keep every prompt within the model's context window.

It is on by default (``RunOptions.fit_window``), for sessions and for runs, and
applies after the compaction policy the user set, if any. Before a turn, the
prompt is counted in tokens: as the model reported the last prompt over this
thread (``PromptSize``: its tokens, less Ratchet's estimate of the messages it
carried, is the part an estimate misses: instructions, tool schemas, formatting),
plus four characters a token for the messages. Past ``trigger`` of the window
(80%) the prompt is cut down to ``target`` (50%), in this order, stopping as soon
as it fits:

1. tool results older than the newest ``keep_turns`` turns become a one-line note;
2. those older turns are left out, oldest first;
3. tool results of the newest turns but the last become a note;
4. the newest turns but the last are left out, oldest first.

Leading system messages, the first user message (the task), the last turn and the
turn's new messages always stay; a tool call is never parted from its result. Only
the working view changes: the log and history keep every message.

A window is known from the model (``ModelClient.context_window``) or learnt from a
service's overflow error. When the service refuses a prompt anyway, the turn counts
the prompt as the service did, cuts it down again and asks once more.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pydantic import ConfigDict, Field, model_validator

from ratchet.errors import ContextOverflowError
from ratchet.types import Message, PromptSize, SparseModel, Usage
from ratchet.types.views import dropped

from ._compaction import estimate_tokens, pinned_count, turn_groups

Plan = list[tuple[int, bool]]
"""The messages a prompt keeps, by index, each with whether its tool result is dropped."""


class FitWindow(SparseModel):
    """Keep prompts under ``trigger`` of the model's window by cutting them down to
    ``target`` of it (see the module's docstring for the order)."""

    model_config = ConfigDict(frozen=True)

    trigger: float = Field(default=0.8, gt=0, le=1)
    target: float = Field(default=0.5, gt=0, le=1)
    keep_turns: int = Field(default=4, ge=1)
    """Turns kept whole while older ones can go."""

    @model_validator(mode="after")
    def _target_below_trigger(self) -> FitWindow:
        if self.target > self.trigger:
            raise ValueError(
                f"FitWindow target ({self.target}) must not be above its trigger "
                f"({self.trigger}): a prompt cut down to the target would be over again."
            )
        return self

    def plan(
        self,
        messages: Sequence[Message],
        new: Sequence[Message],
        window: int,
        measure: PromptSize | None = None,
    ) -> Plan | None:
        """What of ``messages`` (the thread as the agent would see it, before the
        turn's ``new`` messages) to keep; ``None`` when the prompt fits or nothing
        can be left out."""
        sizes = [estimate_tokens([m]) for m in messages]
        extra = estimate_tokens(new) + (measure.overhead if measure else 0)
        total = sum(sizes) + extra
        if total <= self.trigger * window:
            return None
        goal = self.target * window
        drop: set[int] = set()
        removed: set[int] = set()
        for action, group in self._steps(messages):
            if total <= goal:
                break
            if action == "remove":
                total -= sum(sizes[i] for i in group)
                removed.update(group)
                continue
            for i in group:
                note = dropped(messages[i])
                if note is not messages[i]:
                    total -= sizes[i] - estimate_tokens([note])
                    sizes[i] = estimate_tokens([note])
                    drop.add(i)
        if not drop and not removed:
            return None
        return [(i, i in drop) for i in range(len(messages)) if i not in removed]

    def _steps(self, messages: Sequence[Message]) -> Iterator[tuple[str, list[int]]]:
        start = pinned_count(messages)
        groups: list[list[int]] = []
        for group in turn_groups(messages[start:]):
            first = start + sum(len(g) for g in groups)
            groups.append(list(range(first, first + len(group))))
        cut = max(0, len(groups) - self.keep_turns)
        older, newer = groups[:cut], groups[cut:-1]  # the last turn always stays
        for part in (older, newer):
            yield from (("drop", g) for g in part)
            yield from (("remove", g) for g in part)


def kept(messages: Sequence[Message], plan: Plan) -> list[Message]:
    """The messages a plan keeps, tool results dropped where it says."""
    return [dropped(messages[i]) if drop else messages[i] for i, drop in plan]


def measured(
    usage: Usage, estimate: int, window: int | None, declared: int | None
) -> PromptSize | None:
    """What a turn reports of its prompt: its model calls' average prompt tokens.
    ``None`` if it reported none, or if there is no window to keep the next prompt
    within (the model declares none and has refused none): nothing would read it,
    and it would be written to history twice a turn."""
    if usage.requests <= 0 or usage.input_tokens <= 0 or (window is None and declared is None):
        return None
    tokens = usage.input_tokens // usage.requests
    lower = window if window != declared else None
    return PromptSize(tokens=tokens, estimate=estimate, window=lower, declared=declared)


def refused(
    error: ContextOverflowError, estimate: int, window: int | None, measure: PromptSize | None
) -> PromptSize:
    """The prompt a service refused, counted as the service counted it (or, when it
    did not say, as just over the window), with the window it said if lower."""
    guess = estimate + (measure.overhead if measure else 0)
    limit = min(error.limit, window) if error.limit and window else error.limit or window
    limit = limit or max(1, guess)
    return PromptSize(tokens=error.tokens or max(guess, limit + 1), estimate=estimate, window=limit)
