"""What the Temporal UI shows of a run: its static details, each turn's summary
and the progress table in the workflow's current details."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ratchet.types import ExecutionRecord, Message

PROGRESS_ROWS = 20

ShowDetails = Callable[[str], None]
"""Shows a run's progress (Markdown): the workflow's current details by default; a
session shows its run's under its own."""


def turn_summary(turn: int, pending: Sequence[Message], previous: Sequence[Message]) -> str:
    """What the UI shows for a turn activity: what this turn is given to work on."""
    calls = [c.describe(40) for m in previous for c in m.tool_calls]
    if calls:
        shown = ", ".join(calls[:3]) + (f" +{len(calls) - 3}" if len(calls) > 3 else "")
        return f"turn {turn} · after {shown}"
    text = next((m.text for m in reversed(pending) if m.text), "")
    if text:
        text = text if len(text) <= 60 else text[:59] + "…"
        return f"turn {turn} · {json.dumps(text, ensure_ascii=False)}"
    return f"turn {turn}"


def run_details(
    agent: str,
    messages: Sequence[Message],
    *,
    session: str | None,
    parent: str | None,
    limit: int = 600,
) -> str:
    """A run's static details for the UI: agent, first prompt, session and parent."""
    prompt = next((m.text for m in messages if m.role == "user" and m.text), "")
    if len(prompt) > limit:
        prompt = prompt[: limit - 1] + "…"
    lines = [f"**Agent:** {agent}"]
    if session:
        lines.append(f"**Session:** `{session}`")
    if parent:
        lines.append(f"**Parent:** `{parent}`")
    if prompt:
        lines += ["", "**Prompt:**", "", *(f"> {line}" for line in prompt.splitlines())]
    return "\n".join(lines)


def progress_markdown(
    agent: str,
    execution: ExecutionRecord,
    error: str | None = None,
    waiting: Sequence[str] = (),
) -> str:
    """The run's current details for the UI: one row per checkpointed turn."""
    lines = [
        f"**{agent}** · {execution.status.value} · {execution.step_count} turns · "
        f"{execution.usage.total_tokens} tokens",
        "",
        "| turn | did |",
        "|---|---|",
    ]
    shown = execution.step_results[-PROGRESS_ROWS:]
    if execution.step_count > len(shown):
        lines.append(f"| … | {execution.step_count - len(shown)} earlier turns |")
    for step in shown:
        did = "final answer" if step.final else ", ".join(step.tool_calls) or "(no tools)"
        lines.append(f"| {step.turn} | {did.replace('|', '/')} |")
    if waiting:
        lines += ["", f"**Waiting for** ({execution.status.value}):"]
        lines += [f"- {w.replace('|', '/')}" for w in waiting]
    if error:
        lines += ["", f"**Failed:** {error}"]
    return "\n".join(lines)
