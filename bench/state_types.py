"""State types for bench.state_cost (stored classes must be importable, not in __main__)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from decimal import Decimal
from uuid import UUID

from pydantic import BaseModel


class Line(BaseModel):
    sku: str
    quantity: int
    price: Decimal


class Order(BaseModel):
    id: UUID
    placed: datetime
    lines: list[Line]


@dataclasses.dataclass
class Customer:
    name: str
    tier: str
    tags: list[str]


def typical_state() -> dict[str, object]:
    order = Order(
        id=UUID(int=1),
        placed=datetime(2026, 11, 21, tzinfo=UTC),
        lines=[Line(sku=f"sku-{i}", quantity=i % 3 + 1, price=Decimal("9.90")) for i in range(50)],
    )
    return {
        "order": order,
        "customer": Customer("Ada", "gold", ["eu", "vip"]),
        "limits": {"daily": Decimal("500"), "since": datetime(2026, 1, 1, tzinfo=UTC)},
    }
