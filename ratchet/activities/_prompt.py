"""A turn's prompt: the view of its thread's log, rendered, with its new messages,
after the run's compaction policy.

The worker finds the log positions the turn names in what the workflow handed
over (inline in fast mode, or in the same process), in its cache, or pages them
in from the workflow (``thread_log.resolve_log``). The compaction policy
(``RunOptions.compaction``) then changes only the view: a ``Summarize`` policy's
summariser runs here, as a step of the turn that a retried attempt does not
repeat, and its note joins the log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from temporalio import activity
from temporalio.exceptions import ApplicationError

from ratchet._handoff import HANDOFF
from ratchet.agents import (
    Agent,
    ChatMessageThread,
    Compaction,
    RunContext,
    ServiceThread,
    Summarize,
    Thread,
)
from ratchet.agents._engine import MESSAGES, Plan, kept
from ratchet.agents._engine import compact as compaction_of
from ratchet.errors import UsageError
from ratchet.history import Holder
from ratchet.types import Message, Span, Usage, new_id, views
from ratchet.wire import THREAD_NOT_CACHED, ThreadRef, TurnInput

from ._log_cache import ThreadCache
from ._owner import workflow_of
from ._thread_log import LogNotCached, resolve_log

Compacted = tuple[list[Span], Message | None, Usage]
"""A turn's new view, its summary note (if any) and what summarising cost."""


@dataclass
class LogPrompt:
    """A turn's prompt before it is fitted to the window: the view's messages at
    their log positions (after the compaction policy), and the new messages."""

    thread: ThreadRef
    messages: list[Message]
    shown: list[tuple[int, bool]]
    """Log positions of ``messages`` (a summary note's is ``length``), drop flags."""
    new: list[Message]
    message_at: Callable[[int], Message]
    note: Message | None = None
    usage: Usage | None = None
    """Set when the compaction policy changed the view (with what summarising cost)."""

    @property
    def start(self) -> int:
        """Log position of the first new message."""
        return self.thread.length

    @property
    def length(self) -> int:
        """The log's length with the new messages."""
        return self.thread.length + len(self.new)

    @property
    def fits(self) -> bool:
        """Whether Ratchet may cut it down (a service-held conversation it cannot)."""
        return self.thread.kind == MESSAGES

    def fitted(self, plan: Plan | None) -> tuple[Thread, Compacted | None]:
        """The agent's thread, and the view from now on if it changed."""
        ref = self.thread
        if not self.fits:
            return ServiceThread(ref.kind, id=ref.id, cursor=ref.cursor, unsent=self.messages), None
        messages, shown = self.messages, self.shown
        if plan is not None:
            messages = kept(messages, plan)
            shown = [(shown[i][0], drop or shown[i][1]) for i, drop in plan]
        thread = ChatMessageThread(messages, id=ref.id)
        if plan is None and self.usage is None:
            return thread, None
        note = self.length if self.note is not None else None
        view = views.view_of(shown, self.start, note)
        return thread, (view, self.note, self.usage or Usage())


async def load_prompt(cache: ThreadCache, input: TurnInput) -> LogPrompt:
    """The view of the log and the new messages, found wherever they are. A local
    activity (fast mode) that lacks some fails with ``ThreadNotCached``: its
    workflow, blocked on it, cannot answer a query, and takes the turn again as a
    regular activity."""
    ref, info = input.thread, activity.info()
    start, length = ref.length, ref.length + input.new_count
    # Inline (a local activity), or handed over by the workflow in this process.
    handed = input.new_messages or HANDOFF.take(ref.id, start, input.new_last_tag) or []
    known = dict(enumerate(handed, start)) if len(handed) == input.new_count else {}
    try:
        message_at = await resolve_log(
            cache,
            None if info.is_local else activity.client(),
            Holder(*workflow_of(info), ref.id),
            length=start,
            last_tag=ref.last_tag,
            ranges=[*views.ranges(input.view, start), (start, length)],
            known=known,
        )
    except LogNotCached as e:
        raise ApplicationError(str(e), type=THREAD_NOT_CACHED, non_retryable=True) from e
    messages, shown = views.render(input.view, start, message_at)
    new = [message_at(p) for p in range(start, length)]
    return LogPrompt(ref, messages, shown, new, message_at)


Summariser = Callable[[str], Agent]
"""The worker's agent of a name (a ``Summarize`` policy's summariser)."""


async def compact(
    prompt: LogPrompt, policy: Compaction, context: RunContext, summariser: Summariser
) -> None:
    """Apply the run's compaction policy to the prompt's view, when it is over budget."""
    found = compaction_of(policy, prompt.messages, prompt.shown) if prompt.fits else None
    if found is None:
        return
    pinned = views.materialize(found.pinned, prompt.message_at)
    note, usage = None, Usage()
    if isinstance(policy, Summarize) and found.older:
        agent = summariser(policy.agent)
        note, usage = await summarise(agent, policy, [*pinned, *found.older], context)
        note = policy.summary_message(note, len(found.older))
        note.id = new_id()
    rest = views.materialize(found.rest, prompt.message_at)
    prompt.messages = [*pinned, *([note] if note is not None else []), *rest]
    prompt.shown = [*found.pinned, *([(prompt.length, False)] if note else []), *found.rest]
    prompt.note, prompt.usage = note, usage


STEP_PREFIX = "compaction/"
"""The summariser's steps are recorded under this prefix in the turn's progress."""


async def summarise(
    agent: Agent, policy: Summarize, messages: list[Message], context: RunContext
) -> tuple[Message, Usage]:
    """The summariser agent's answer on ``messages`` (its steps are the turn's, so a
    retried attempt does not repeat them)."""
    prefix = STEP_PREFIX
    completed = {k[len(prefix) :]: v for k, v in context.completed.items() if k.startswith(prefix)}
    sub = RunContext(
        run_id=context.run_id,
        execution_id=context.execution_id,
        agent=policy.agent,
        turn=context.turn,
        attempt=context.attempt,
        completed=completed,
        checkpoint=lambda steps: context.record({prefix + k: v for k, v in steps.items()}),
        acknowledge_hook=context.acknowledge_hook,
        confirm_hook=context.confirm_hook,
        resources=context.resources,
    )
    result = await agent.run([], ChatMessageThread(messages), sub)
    if result.final_response is None:
        raise UsageError(
            f"Summariser agent {policy.agent!r} returned no final_response; it must "
            "answer with the summary."
        )
    return result.final_response, result.usage
