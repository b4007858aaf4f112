"""What an evaluation scores: a case (a prompt and what is expected of the answer) and
an outcome (what an agent answered, the tool calls it made, what it cost)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from ratchet.types import ToolCall, Usage


class Case(BaseModel):
    """One thing to ask an agent, and what is expected of its answer."""

    id: str
    prompt: str
    expected: str | None = None
    """The expected answer, for evaluators that compare (``exact``, ``contains``...)."""
    weights: dict[str, float] = Field(default_factory=dict)
    """Evaluator name -> weight in the case's score (default 1 each)."""
    metadata: dict[str, Any] = Field(default_factory=dict)


class Outcome(BaseModel):
    """What an agent did with a case."""

    answer: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Usage()
    latency_s: float = 0.0
    error: str | None = None
    """Set when the run failed: every evaluator then scores 0."""
    live_calls: list[str] = Field(default_factory=list)
    """Calls that ran for real during a rerun (not answered from the recording)."""


class Score(BaseModel):
    """One evaluator's verdict: ``value`` in [0, 1] and why."""

    value: float = Field(ge=0.0, le=1.0)
    reason: str = ""


class CaseScore(BaseModel):
    """A case's scores by evaluator and their weighted mean."""

    case_id: str
    scores: dict[str, Score]
    value: float
    """The weighted mean of ``scores`` (0 for a failed run)."""
