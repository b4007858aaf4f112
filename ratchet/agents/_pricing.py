"""What model calls cost, when you tell Ratchet the prices."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ratchet.types import Usage


class ModelPrice(BaseModel):
    """A model's list price in US dollars per million tokens.

    Give it to a model (``OpenAIChatModel("gpt-4o", price=ModelPrice(...))``) and
    every call's ``Usage.cost_usd`` is filled in; runs and sessions add it up, and
    the Temporal UI can filter on ``AgentCostUsd``.
    """

    input_per_million: float = Field(ge=0)
    output_per_million: float = Field(ge=0)

    def cost(self, usage: Usage) -> float:
        return (
            usage.input_tokens * self.input_per_million
            + usage.output_tokens * self.output_per_million
        ) / 1_000_000

    def bill(self, usage: Usage) -> Usage:
        return usage.model_copy(update={"cost_usd": usage.cost_usd + self.cost(usage)})
