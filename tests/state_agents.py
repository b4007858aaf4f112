"""State types and a step-driven agent for the agent-state tests.

Types stored in state must be importable by module path, so they live here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from datetime import date, datetime
from decimal import Decimal
from enum import Enum
from pathlib import Path
from uuid import UUID

from pydantic import BaseModel

from ratchet.agents import Agent, Result, RunContext, StateSerializer, Thread, state_schema
from ratchet.types import Message


class Color(Enum):
    RED = "red"
    GREEN = "green"


@dataclasses.dataclass
class Point:
    x: int
    y: int
    label: str = ""


class Profile(BaseModel):
    customer: UUID
    since: date
    balance: Decimal


def _add_currency(data: dict) -> dict:
    return {**data, "currency": "EUR"}


@state_schema(2, upgrades={1: _add_currency})
class Cart(BaseModel):
    """Version 1 had only ``items``; version 2 adds ``currency``."""

    items: list[str]
    currency: str


class Connection:
    """Stands for a database connection: not data, cannot be stored as JSON."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.closed = False

    async def aclose(self) -> None:
        self.closed = True


class Opaque:
    """A plain object only pickle can store."""

    def __init__(self, secret: str) -> None:
        self.secret = secret


class Booby:
    """Unpickling this writes a file: proof that a payload was (or was not) unpickled."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (Path(self.path).write_text, ("unpickled",))


Step = Callable[[RunContext], Awaitable[str | None]]


class StepAgent(Agent):
    """Turn N runs ``steps[N-1]``; a step returning text ends the run with it."""

    def __init__(self, *steps: Step, serializer: StateSerializer | None = None) -> None:
        self.steps = steps
        self.state_serializer = serializer

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        text = await self.steps[context.turn - 1](context)
        if text is None:
            await thread.on_new_messages([Message.assistant(f"turn {context.turn} done")])
            return Result()
        return Result(final_response=Message.assistant(text))


def rich_values() -> dict[str, object]:
    from zoneinfo import ZoneInfo

    return {
        "when": datetime(2026, 11, 21, 9, 30, tzinfo=ZoneInfo("Europe/Oslo")),
        "day": date(2026, 11, 21),
        "id": UUID("12345678-1234-5678-1234-567812345678"),
        "price": Decimal("19.90"),
        "color": Color.GREEN,
        "point": Point(1, 2, "home"),
        "profile": Profile(
            customer=UUID("87654321-4321-8765-4321-876543218765"),
            since=date(2020, 1, 2),
            balance=Decimal("-3.50"),
        ),
        "tags": {"vip", "eu"},
        "pair": (1, "one"),
        "nested": {"points": [Point(0, 0)], "ids": (UUID(int=7),), 3: "int key"},
    }
