"""Two orchestrations written as plain Temporal workflows, to copy and adapt.

Each agent call is ``run_agent`` / ``AgentRunner`` inside workflow code: turns
run as activities, and the threads stay in the workflow (held, forked and
passed on as the orchestration likes). Register them with
``build_worker(..., workflows=[WriterCriticLoop, FanOut])``.
"""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, Field
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ratchet.types import Message, Usage
    from ratchet.wire import RunOptions
    from ratchet.workflows import AgentRunner, run_agent


class WriterCriticInput(BaseModel):
    brief: str
    writer: str = "writer"
    critic: str = "critic"
    max_rounds: int = 3
    approval_word: str = "APPROVED"
    """The critic says this word when the draft needs no more work."""
    options: RunOptions = Field(default_factory=RunOptions)


class WriterCriticResult(BaseModel):
    draft: str
    approved: bool
    rounds: int
    critiques: list[str]
    usage: Usage


@workflow.defn(name="WriterCriticLoop")
class WriterCriticLoop:
    """The writer drafts; a critic reviews each draft on a fresh thread of its own;
    the writer revises on its one growing thread until the critic approves or the
    rounds run out."""

    @workflow.run
    async def run(self, input: WriterCriticInput) -> WriterCriticResult:
        writer = AgentRunner(input.writer, options=input.options)
        draft = await writer.run(f"Write: {input.brief}")
        usage = draft.usage
        critiques: list[str] = []
        for _ in range(input.max_rounds):
            review = await run_agent(
                input.critic,
                f"Review this draft for the brief {input.brief!r}. Reply "
                f"{input.approval_word} if it is ready; otherwise say what to change.\n\n"
                f"{draft.output}",
                options=input.options,
            )
            usage += review.usage
            if input.approval_word in review.output:
                return WriterCriticResult(
                    draft=draft.output,
                    approved=True,
                    rounds=len(critiques) + 1,
                    critiques=critiques,
                    usage=usage,
                )
            critiques.append(review.output)
            draft = await writer.run(f"Revise the draft. The critic says: {review.output}")
            usage += draft.usage
        return WriterCriticResult(
            draft=draft.output,
            approved=False,
            rounds=len(critiques),
            critiques=critiques,
            usage=usage,
        )


class FanOutInput(BaseModel):
    question: str
    angles: list[str]
    """One researcher run per angle, all at once."""
    background: list[Message] = Field(default_factory=list)
    """A thread every branch starts from (each gets its own fork of it)."""
    researcher: str = "researcher"
    synthesizer: str = "synthesizer"
    options: RunOptions = Field(default_factory=RunOptions)


class FanOutResult(BaseModel):
    answer: str
    findings: dict[str, str]
    usage: Usage


@workflow.defn(name="FanOut")
class FanOut:
    """Research a question from several angles in parallel, each branch on its own
    fork of the background thread, then merge the findings in one synthesis run."""

    @workflow.run
    async def run(self, input: FanOutInput) -> FanOutResult:
        branches = await asyncio.gather(
            *(
                run_agent(
                    input.researcher,
                    f"{input.question}\nFocus on: {angle}",
                    thread=list(input.background),
                    options=input.options,
                )
                for angle in input.angles
            )
        )
        findings = {angle: r.output for angle, r in zip(input.angles, branches, strict=True)}
        notes = "\n".join(f"- {angle}: {text}" for angle, text in findings.items())
        answer = await run_agent(
            input.synthesizer,
            f"Answer {input.question!r} from these findings:\n{notes}",
            options=input.options,
        )
        usage = answer.usage
        for branch in branches:
            usage += branch.usage
        return FanOutResult(answer=answer.output, findings=findings, usage=usage)
