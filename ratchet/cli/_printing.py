"""What ``ratchet sessions`` prints of a session or a run: what it waits for, its
last messages, a table of its turns.

Shared by the session verbs (``sessions.py``) and the run verbs (``targets.py``),
so neither imports the other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ratchet.types import ExecutionRecord, PendingView, ThreadData


def counted(n: int, word: str) -> str:
    """``1 case``, ``2 cases`` (``word`` takes an ``s``)."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def print_pending(pending: list[PendingView]) -> None:
    for item in pending:
        print(f"waiting for {item.action.kind}: {item.action.id} · {item.action.describe()}")


def print_last(thread: ThreadData, last: int) -> None:
    """The thread's ``last`` messages, after how many came before them (``thread``
    may be its latest part only: ``offset`` counts the messages before it)."""
    messages = thread.messages[-last:]
    for gap in thread.gaps:  # Temporal deleted the run that held them
        print(
            f"gone: messages {gap.start}-{gap.end - 1} (Temporal no longer has run "
            f"{gap.run_id}, which held them, or the runs before it: the namespace's "
            "retention passed before the session copied them, or they were deleted)"
        )
    if thread.length > len(messages):
        print(f"… {thread.length - len(messages)} earlier messages")
    for message in messages:
        text = message.text or ", ".join(c.describe() for c in message.tool_calls)
        print(f"{message.role}: {text}")


def turns_table(execution: ExecutionRecord, before: int = 0) -> str:
    """A run's turns: when each was scheduled, how long it took from there (queueing and
    retries included, as ``TurnRecord.duration``), tokens, cost and what each did.
    ``before``: the turns earlier runs of its session took, so turns are numbered as
    the session counts them (``sessions fork --at-turn``)."""
    rows = [["turn", "scheduled", "took", "tokens", "cost", "did"]]
    for step in execution.step_results:
        took = (step.completed_at - step.started_at).total_seconds()
        did = "final answer" if step.final else ", ".join(step.tool_calls) or "(no tools)"
        rows.append(
            [
                str(before + step.turn),
                step.started_at.strftime("%H:%M:%S"),
                f"{took:.1f}s",
                str(step.usage.total_tokens),
                f"${step.usage.cost_usd:.4f}" if step.usage.cost_usd else "-",
                did,
            ]
        )
    return table(rows)


def table(rows: list[list[str]]) -> str:
    """Rows as aligned columns, the first row a header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
