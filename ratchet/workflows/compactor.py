"""Compaction of a run's own thread, before a turn, in workflow code: the run's
policy, then the model's window (``RunOptions.fit_window``, counted from what the
last turn reported; the turn itself cuts a prompt the model refuses).

A session's log is compacted by its turn activity instead (only the view
changes), and a run over a legacy session's thread leaves it to the session.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ratchet.agents.compaction import CompactionPolicy, Summarize
    from ratchet.agents.fit_window import kept
    from ratchet.agents.messages import Message
    from ratchet.wire.options import RunOptions

    from .ledger import RunLedger, workflow_message_id
    from .turns import TurnCalls, TurnInputs


class Compactor:
    def __init__(
        self, options: RunOptions, ledger: RunLedger, inputs: TurnInputs, calls: TurnCalls
    ) -> None:
        self._options = options
        self._ledger = ledger
        self._inputs = inputs
        self._calls = calls

    async def before_turn(self, turn: int, pending: list[Message]) -> None:
        """Compact the thread if it is over the policy's budget, then fit it to the
        model's window as the last turn counted it (``RunOptions.fit_window``)."""
        thread = self._ledger.thread
        if (
            thread.kind != "messages"
            or thread.base is not None  # a session's run: the session compacts its thread
            or thread.view is not None  # a session's log: the turn compacts the view
        ):
            return
        policy = self._options.compaction
        if policy is not None and policy.over_budget(thread.messages):
            await self._compact(turn, policy)
        fit, measure = self._options.fit_window, self._ledger.thread.prompt
        if fit is not None and measure is not None and measure.window is not None:
            messages = self._ledger.thread.messages
            plan = fit.plan(messages, pending, measure.window, measure)
            if plan is not None:
                self._replace(kept(messages, plan), "fit_window")

    async def _compact(self, turn: int, policy: CompactionPolicy) -> None:
        thread = self._ledger.thread
        if isinstance(policy, Summarize):
            pinned, older, recent = policy.split(thread.messages, policy.keep_turns)
            if not older:
                return
            request = self._inputs.build(turn, [], agent=policy.agent, upto=len(pinned + older))
            output = await self._calls.take(
                request, f"compact · summarise {len(older)} messages", agent=policy.agent
            )
            summary = next(m for m in output.added if isinstance(m, Message))
            self._ledger.add_usage(output.usage)
            note = policy.summary_message(summary, len(older))
            note.id = workflow_message_id()
            messages = [*pinned, note, *recent]
        else:
            messages = policy.compact(thread.messages)
        self._replace(messages, policy.strategy)

    def _replace(self, messages: list[Message], strategy: str) -> None:
        thread = self._ledger.thread
        if len(messages) == len(thread.messages) and all(
            a is b for a, b in zip(messages, thread.messages, strict=True)
        ):
            return  # nothing to drop
        self._ledger.replace_thread(
            thread.model_copy(update={"generation": thread.generation + 1, "messages": messages})
        )
        workflow.logger.info(
            "Compacted thread %s (%s): %d -> %d messages",
            thread.id,
            strategy,
            len(thread.messages),
            len(messages),
        )
