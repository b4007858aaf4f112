"""Client tools: tools the caller of a run runs, not the agent's worker (an AG-UI
frontend's tools, offered with each run in ``RunAgentInput.tools``).

A run started with ``client_tools`` (``RunOptions.client_tools``) offers them to the
model next to the agent's own (an agent's own tool of the same name wins). A call
to one is not run in the turn: it is pending work of kind ``client``, and the run
waits durably, holding no worker, until the caller sends the call's result
(``provide_tool_result``) or ``RunOptions.client_tool_timeout`` passes, when the
model reads an error instead.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import field_validator

from ._sparse import SparseModel

NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A tool name the model services take: 1 to 64 letters, digits, ``_`` or ``-``."""


class ClientTool(SparseModel):
    """A tool the caller runs: its name, what it does, and its arguments' JSON schema."""

    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None
    """The arguments' JSON schema (``None``: it takes none)."""

    @field_validator("name")
    @classmethod
    def _named(cls, name: str) -> str:
        if not NAME.fullmatch(name):
            raise ValueError(
                f"a client tool's name is 1 to 64 letters, digits, '_' or '-' (as model "
                f"services take them); got {name!r}"
            )
        return name


def tool_problems(tools: Sequence[ClientTool]) -> list[str]:
    """What is wrong with a run's client tools as a whole: names offered twice."""
    names = [t.name for t in tools]
    twice = sorted({n for n in names if names.count(n) > 1})
    if not twice:
        return []
    return [f"client_tools offers {', '.join(map(repr, twice))} twice; name each tool once"]
