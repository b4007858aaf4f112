"""Compaction of a run's own thread, before a turn, in workflow code.

A session's log is compacted by its turn activity instead (only the view
changes), and a run over a legacy session's thread leaves it to the session.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ratchet.agents.compaction import Summarize
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

    async def before_turn(self, turn: int) -> None:
        """Compact the thread if it is over the policy's budget."""
        policy = self._options.compaction
        ledger = self._ledger
        thread = ledger.thread
        if (
            policy is None
            or thread.kind != "messages"
            or thread.base is not None  # a session's run: the session compacts its thread
            or thread.view is not None  # a session's log: the turn compacts the view
            or not policy.over_budget(thread.messages)
        ):
            return
        if isinstance(policy, Summarize):
            pinned, older, recent = policy.split(thread.messages, policy.keep_turns)
            if not older:
                return
            request = self._inputs.build(turn, [], agent=policy.agent, upto=len(pinned + older))
            output = await self._calls.take(
                request, f"compact · summarise {len(older)} messages", agent=policy.agent
            )
            summary = next(m for m in output.added if isinstance(m, Message))
            ledger.add_usage(output.usage)
            note = policy.summary_message(summary, len(older))
            note.id = workflow_message_id()
            messages = [*pinned, note, *recent]
        else:
            messages = policy.compact(thread.messages)
        if len(messages) == len(thread.messages) and all(
            a is b for a, b in zip(messages, thread.messages, strict=True)
        ):
            return  # nothing to drop
        ledger.replace_thread(
            thread.model_copy(update={"generation": thread.generation + 1, "messages": messages})
        )
        workflow.logger.info(
            "Compacted thread %s (%s): %d -> %d messages",
            thread.id,
            policy.strategy,
            len(thread.messages),
            len(messages),
        )
