"""The shop's stored types. State classes live in an importable module (not in
``__main__``), so a worker in another process can read them back."""

from typing import Any

from pydantic import BaseModel

from ratchet.agents import state_schema


def add_currency(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 of Cart had no currency."""
    return {**data, "currency": "EUR"}


@state_schema(2, upgrades={1: add_currency})
class Cart(BaseModel):
    items: list[str]
    currency: str
