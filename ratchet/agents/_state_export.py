"""Agent state as a host sees it: read, export and load.

A :class:`StateExport` is JSON (``to_json`` / ``load``) holding the committed
state of every agent of a session, with each key's version. Load it into a new
session with ``AgentClient.start_run(..., state=export)``. Values are decoded
only when you ask for them, by the serializer that stored them; a stored type
with an older schema version is upgraded on the way (see ``state_schema``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError

from ratchet.errors import StateError
from ratchet.types import ShareToken, SparseModel, StateEntry

from ._serializers import StateSerializer
from ._state_context import UNSET, StateContext

T = TypeVar("T")
FORMAT = "ratchet.state"
FORMAT_VERSION = 1


class AgentStateExport(SparseModel):
    """One agent's committed state."""

    agent: str
    session_id: str = ""
    entries: dict[str, StateEntry] = Field(default_factory=dict)
    shares: list[ShareToken] = Field(default_factory=list[ShareToken])
    """Tokens this agent has granted (valid only in the session that made them)."""

    def entries_to_load(self) -> dict[str, StateEntry]:
        """The entries for a new session. An export may have been edited, so values
        lose their origin: a worker must not take a cached value in their place."""
        return {k: e.model_copy(update={"origin": None}) for k, e in self.entries.items()}


class StateExport(BaseModel):
    """The committed state of a session's agents, as JSON-ready data."""

    format: Literal["ratchet.state"] = FORMAT
    format_version: int = FORMAT_VERSION
    workflow_id: str | None = None
    exported_at: datetime | None = None
    agents: list[AgentStateExport] = Field(default_factory=list[AgentStateExport])

    @classmethod
    def load(cls, data: StateExport | dict[str, Any] | str | bytes) -> StateExport:
        """Read an export (an object, a dict, or its JSON text), checking its format."""
        if isinstance(data, StateExport):
            return data
        if isinstance(data, str | bytes):
            try:
                data = json.loads(data)
            except ValueError as e:
                raise StateError(f"A state export must be JSON: {e}") from e
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise StateError(
                f"Not a Ratchet state export: expected a JSON object with format {FORMAT!r} "
                "(made by RunHandle.export_state())."
            )
        if data.get("format_version", 1) > FORMAT_VERSION:
            raise StateError(
                f"This state export has format version {data['format_version']}; this Ratchet "
                f"reads up to {FORMAT_VERSION}. Upgrade Ratchet where you load it."
            )
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            raise StateError(f"The state export is malformed: {e}") from e

    def to_json(self, *, indent: int | None = 2) -> str:
        return self.model_dump_json(indent=indent)

    def agent(self, name: str | None = None) -> AgentStateExport:
        """One agent's state; ``name`` may be left out when the export holds one agent."""
        if name is None and len(self.agents) == 1:
            return self.agents[0]
        found = [a for a in self.agents if a.agent == name]
        if len(found) == 1:
            return found[0]
        names = ", ".join(a.agent for a in self.agents) or "(none)"
        problem = "several agents" if name is None else f"no single agent named {name!r}"
        raise StateError(f"This state export has {problem}; it has: {names}. Name one agent.")

    def keys(self, agent: str | None = None) -> list[str]:
        return list(self.agent(agent).entries)

    def version(self, key: str, *, agent: str | None = None) -> int:
        entry = self.agent(agent).entries.get(key)
        return entry.version if entry else 0

    def get(
        self,
        key: str,
        type_or_default: Any = UNSET,
        default: Any = None,
        *,
        agent: str | None = None,
        serializers: Sequence[StateSerializer] = (),
    ) -> Any:
        """Decode one value, like ``context.state.get`` does in a turn. Pass the
        agent's serializer in ``serializers`` if it is not the JSON default."""
        chosen = self.agent(agent)
        view = StateContext(
            chosen.entries,
            serializer=next(iter(serializers), None),
            agent=chosen.agent,
        )
        return view.get(key, type_or_default, default)
