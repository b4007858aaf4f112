"""A turn's prompt fitted into the model's context window (``RunOptions.fit_window``).

The prompt is the view of the thread's log and the turn's new messages
(``prompt.LogPrompt``). Before the agent runs, ``PromptFit`` cuts the view down
when it is counted over the window (``ratchet.agents._fit_window``); when the
model refuses the prompt anyway, the turn counts it as the service did, cuts it
down again and runs the agent once more, within the same attempt (a Temporal
retry would send the same prompt). A cut is a new view of the log, kept for the
thread's next turns; the log keeps every message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from temporalio import activity

from ratchet.agents import Agent, FitWindow, RunContext, Thread
from ratchet.agents._engine import Plan, estimate_tokens, measured, refused
from ratchet.errors import ContextOverflowError
from ratchet.types import Message, PromptSize, Usage
from ratchet.wire import TurnInput

from ._prompt import Compacted, LogPrompt

REFUSED = "fit_window/refused"
"""The step a refusal is recorded as, so a retried attempt cuts as much."""


@dataclass
class Fitted:
    """What the agent was given (and answered): the thread it appended to, from
    message ``before`` on, its new messages, and the new view, if any."""

    thread: Thread
    new: list[Message]
    compacted: Compacted | None = None
    before: int = 0
    sent: list[Message] = field(default_factory=list[Message])
    result: Any = None


@dataclass
class PromptFit:
    """How one turn keeps its prompt within the window."""

    policy: FitWindow | None
    declared: int | None
    """The window the agent's model declares."""
    measure: PromptSize | None
    window: int | None = None
    """The window in force: the declared one, or lower, as a service's refusal said."""
    refusals: int = 0

    @classmethod
    def of(cls, input: TurnInput, agent: Agent, context: RunContext) -> PromptFit:
        """The turn's fit: a retried attempt starts from the refusal an earlier one had."""
        declared = agent.prompt_window
        earlier = context.completed.get(REFUSED)
        measure = PromptSize.model_validate(earlier) if earlier is not None else input.prompt
        fit = cls(input.fit_window, declared, measure, refusals=int(earlier is not None))
        fit.window = measure.window_for(declared) if measure is not None else declared
        return fit

    async def run(
        self, agent: Agent, prompt: LogPrompt, context: RunContext, input: TurnInput
    ) -> Fitted:
        """Run the agent on the prompt fitted to the window; once more, cut down
        harder, if the model refuses it as too long."""
        fits, source, new = prompt.fits, prompt.messages, prompt.new
        plan = self.plan(source, new) if fits else None
        while True:
            fitted = _fitted(prompt, plan)
            context.thread = fitted.thread
            try:
                fitted.result = await agent.run(list(fitted.new), fitted.thread, context)
                return fitted
            except ContextOverflowError as e:
                again = fits and self.refused(e, fitted.sent, context)
                cut = self.plan(source, new) if again else None
                if cut is None or cut == plan:  # nothing more to leave out
                    raise self.failure(e, input, len(fitted.sent), service=not fits) from e
                plan = cut

    def plan(self, messages: list[Message], new: list[Message]) -> Plan | None:
        if self.policy is None or self.window is None:
            return None
        return self.policy.plan(messages, new, self.window, self.measure)

    def refused(
        self, error: ContextOverflowError, sent: list[Message], context: RunContext
    ) -> bool:
        """Count the prompt the service refused (``sent``: its thread and new
        messages) as the service did; ``False`` when the turn may not ask again."""
        if self.policy is None or self.refusals:
            return False
        self.refusals += 1
        measure = refused(error, estimate_tokens(sent), self.window, self.measure)
        self.measure = measure.model_copy(update={"declared": self.declared})
        self.window = measure.window
        context.record({REFUSED: self.measure.model_dump(mode="json")})
        activity.logger.info(
            "Turn %d of agent %r: the model refused a prompt of %d messages as over its "
            "window (%s); cutting it down and asking once more.",
            context.turn,
            context.agent,
            len(sent),
            error,
        )
        return True

    def report(self, usage: Usage, sent: list[Message]) -> PromptSize | None:
        """This turn's prompt (``sent``) as its model counted it, for the next turn."""
        return measured(usage, estimate_tokens(sent), self.window, self.declared)

    def failure(
        self, error: ContextOverflowError, input: TurnInput, sent: int, *, service: bool
    ) -> ContextOverflowError:
        """The error that fails the turn: the prompt is over the window as small as
        Ratchet makes it, ``fit_window`` is off, or the service holds the conversation."""
        if service:
            advice = (
                f"{error} The service holds this conversation, so Ratchet cannot cut it "
                "down: ask the service to (the Responses API takes truncation='auto' as a "
                "request option), or start a new session."
            )
        elif self.policy is None:
            advice = (
                f"{error} RunOptions.fit_window is None, so the prompt is sent as it is; "
                "leave fit_window at its default (FitWindow()) to have Ratchet cut the "
                "prompt down, or set a compaction policy."
            )
        else:
            advice = (
                "the model refused the prompt as over its context window even cut down "
                f"to {sent} messages (the system messages, the task, the newest turn and "
                f"the turn's new messages always stay): {error} Make the prompt smaller: "
                "have tools return less (store large results elsewhere and return a summary "
                "or a reference), shorten the instructions, or use a model with a larger "
                "window."
            )
        return ContextOverflowError(
            f"Turn {input.turn} of agent {input.agent!r}: {advice}",
            limit=error.limit,
            tokens=error.tokens,
        )


def _fitted(prompt: LogPrompt, plan: Plan | None) -> Fitted:
    thread, compacted = prompt.fitted(plan)
    before = len(thread.messages)
    return Fitted(thread, prompt.new, compacted, before, [*thread.messages, *prompt.new])
