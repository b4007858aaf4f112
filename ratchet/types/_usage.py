"""Token and request accounting."""

from __future__ import annotations

from pydantic import ConfigDict

from ._sparse import SparseModel


class Usage(SparseModel):
    """What a model call, a turn or a run consumed. Immutable (add them with ``+``),
    so a field that defaults to ``Usage()`` is not deep-copied for every instance
    decoded (a history holds one per turn)."""

    model_config = ConfigDict(frozen=True)

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    """In US dollars, for models given a ``ModelPrice`` (0 for the others)."""

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            requests=self.requests + other.requests,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
        )
