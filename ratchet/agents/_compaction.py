"""Compaction: keep the working thread within a budget as a conversation grows.

A policy sits in ``RunOptions.compaction``. Before each turn the engine checks the
thread against the policy's budget (``max_messages``, ``max_tokens`` estimated at
four characters a token); over budget, the policy rewrites the working thread:

- ``KeepLastTurns``: leading system messages, the first user message (the task)
  and the last ``turns`` turns.
- ``DropToolResults``: tool results older than the last ``keep_turns`` turns are
  replaced by a one-line note; everything else stays.
- ``Summarize``: the older part is summarised by a registered agent (for example a
  ``SummarizingAgent``) in a turn activity of its own; the summary replaces it.

A turn here is a group of thread messages: a user or assistant message and the
tool results that answer it. Groups are never split, so a tool result is never
left without the call it answers. Compaction only rewrites the working thread;
every original message stays in Temporal history for audit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, model_validator

from ratchet.types import Message, Span, SparseModel
from ratchet.types.views import dropped, view_of

from ._agent import Agent, Result
from ._context import RunContext
from ._thread import Thread
from .models._base import ModelClient, ModelResponse

SUMMARY_PREFIX = "Summary of the earlier conversation"
DEFAULT_SUMMARY_INSTRUCTIONS = (
    "Summarise the conversation above for the assistant that will continue it: "
    "the user's goal, decisions made, facts and tool results that still matter, and "
    "open questions. Be concise; do not address the user."
)


def estimate_tokens(messages: Sequence[Message]) -> int:
    """About a token per four characters of text and tool calls. A plain loop: every
    turn counts its whole prompt, and generators cost three times as much here."""
    chars = 0
    for m in messages:
        chars += len(m.content or "")
        for c in m.tool_calls:
            chars += len(c.arguments) + len(c.name)
    return chars // 4


def pinned_count(messages: Sequence[Message]) -> int:
    """How many messages compaction never leaves out: the leading system messages
    and the first user message after them (the task)."""
    count = 0
    while count < len(messages) and messages[count].role == "system":
        count += 1
    return count + (count < len(messages) and messages[count].role == "user")


def turn_groups(messages: Sequence[Message]) -> list[list[Message]]:
    """Split messages into groups that must stay together: a message and its tool results."""
    groups: list[list[Message]] = []
    for message in messages:
        if message.role == "tool" and groups:
            groups[-1].append(message)
        else:
            groups.append([message])
    return groups


class Compaction(SparseModel):
    """A budget; subclasses say how to get back under it."""

    max_messages: int | None = None
    max_tokens: int | None = None
    """Estimated at four characters per token."""

    @model_validator(mode="after")
    def _has_budget(self) -> Compaction:
        if self.max_messages is None and self.max_tokens is None:
            raise ValueError(
                f"{type(self).__name__} needs a budget: set max_messages or max_tokens."
            )
        return self

    def over_budget(self, messages: Sequence[Message]) -> bool:
        if self.max_messages is not None and len(messages) > self.max_messages:
            return True
        return self.max_tokens is not None and estimate_tokens(messages) > self.max_tokens

    def kept_turns(self) -> int:
        """How many of the last turns the policy keeps whole."""
        return 0

    def split(
        self, messages: Sequence[Message], keep_turns: int
    ) -> tuple[list[Message], list[Message], list[Message]]:
        """(pinned, older, recent): pinned are leading system messages and the first
        user message; recent are the last ``keep_turns`` groups."""
        count = pinned_count(messages)
        pinned, rest = list(messages[:count]), list(messages[count:])
        groups = turn_groups(rest)
        cut = max(0, len(groups) - keep_turns)
        older = [m for g in groups[:cut] for m in g]
        recent = [m for g in groups[cut:] for m in g]
        return pinned, older, recent


class KeepLastTurns(Compaction):
    strategy: Literal["keep_last_turns"] = "keep_last_turns"
    turns: int = Field(default=10, ge=1)

    def kept_turns(self) -> int:
        return self.turns

    def compact(self, messages: Sequence[Message]) -> list[Message]:
        pinned, _, recent = self.split(messages, self.turns)
        return pinned + recent


class DropToolResults(Compaction):
    strategy: Literal["drop_tool_results"] = "drop_tool_results"
    keep_turns: int = Field(default=3, ge=0)
    """Tool results in the last ``keep_turns`` turns are kept whole."""

    def kept_turns(self) -> int:
        return self.keep_turns

    def compact(self, messages: Sequence[Message]) -> list[Message]:
        pinned, older, recent = self.split(messages, self.keep_turns)
        return pinned + [dropped(m) for m in older] + recent


class Summarize(Compaction):
    strategy: Literal["summarize"] = "summarize"
    agent: str = "summarizer"
    """A registered agent that answers with a summary of the thread it is given: for
    example ``build_worker(client, {"summarizer": SummarizingAgent(model), ...})``."""
    keep_turns: int = Field(default=4, ge=0)

    def kept_turns(self) -> int:
        return self.keep_turns

    def summary_message(self, summary: Message, replaced: int) -> Message:
        return Message.user(f"[{SUMMARY_PREFIX}: {replaced} messages]\n{summary.text}")


CompactionPolicy = Annotated[
    KeepLastTurns | DropToolResults | Summarize, Field(discriminator="strategy")
]


class SummarizingAgent(Agent):
    """Answers with a summary of its thread: register it under ``Summarize.agent``
    (``"summarizer"`` by default) for ``Summarize`` to call."""

    def __init__(self, model: ModelClient, *, instructions: str = DEFAULT_SUMMARY_INSTRUCTIONS):
        self.model = model
        self.instructions = instructions

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        prompt = [*thread.messages, *messages, Message.user(self.instructions)]
        response = await context.once(
            "summary", lambda: self.model.create(prompt, [], context), ModelResponse
        )
        return Result(final_response=response.message, usage=response.usage)


@dataclass
class Compacted:
    """What a compaction keeps in view (log positions with drop flags), in order:
    ``pinned`` (leading system messages and the task), then a summary note (for
    ``Summarize``), then ``rest``. ``older`` are the messages to summarise."""

    pinned: list[tuple[int, bool]]
    rest: list[tuple[int, bool]]
    older: list[Message]

    def view(self, version: int, note: int | None = None) -> list[Span]:
        """The view for the turn that starts at log position ``version``: what is
        kept, the note at log position ``note`` (if any), then everything from
        ``version`` on (the note excepted)."""
        items = [*self.pinned, *([(note, False)] if note is not None else []), *self.rest]
        return view_of(items, version, note)


def compact(
    policy: Compaction,
    messages: Sequence[Message],
    shown: Sequence[tuple[int, bool]],
) -> Compacted | None:
    """Apply ``policy`` to the working ``messages`` (at log positions ``shown``);
    ``None`` when the thread is within budget or nothing can be left out."""
    if not policy.over_budget(messages):
        return None
    where = {id(m): s for m, s in zip(messages, shown, strict=True)}
    pinned, older, recent = policy.split(messages, policy.kept_turns())
    if not older:
        return None
    at = [where[id(m)] for m in pinned]
    if isinstance(policy, DropToolResults):
        if all(m.role != "tool" or where[id(m)][1] for m in older):
            return None  # every older tool result is dropped already
        rest = [(where[id(m)][0], True) for m in older] + [where[id(m)] for m in recent]
        return Compacted(at, rest, [])
    summarised = list(older) if isinstance(policy, Summarize) else []
    return Compacted(at, [where[id(m)] for m in recent], summarised)
