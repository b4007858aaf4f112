"""State values: a committed entry, a turn's change, a conflict, a share token.

What a session's key-value state is made of as the engine stores and reports it;
an agent reads and writes it through ``RunContext.state`` (``ratchet.agents``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from ._sparse import SparseModel


class StateEntry(SparseModel):
    """A committed value as stored: serialised ``data``, its version and serializer."""

    data: Any = None
    version: int = 1
    serializer: str = "json"
    origin: str | None = None
    """The write that committed it (unique per turn result); workers cache by it."""


class ShareToken(SparseModel):
    """Lets another agent of the same session read (and, with ``write``, update) one key.

    Pass it to that agent's run (``run_agent(..., shared=[token])``); the agent
    then uses the token in place of a key: ``context.state.get(token)``.
    """

    id: str
    owner: str
    """The owning agent's session id."""
    agent: str
    key: str
    write: bool = False

    def __str__(self) -> str:
        access = "read/write" if self.write else "read-only"
        return f"{self.agent}:{self.key} ({access})"


class SharedEntry(SparseModel):
    """A shared key as a turn receives it: the token and the key's committed entry."""

    token: ShareToken
    entry: StateEntry | None = None


class StateChange(SparseModel):
    """One key changed by a turn. ``base_version`` is the version the turn started
    from (0: the key did not exist); the commit checks it is still current."""

    key: str
    token: str | None = None
    """Set for another agent's key, changed through a share token (its id)."""
    base_version: int = 0
    data: Any = None
    serializer: str = "json"
    deleted: bool = False


class StateConflict(SparseModel):
    """A turn's state changes that were not committed because a key had moved on."""

    agent: str
    turn: int
    key: str
    owner_agent: str
    expected_version: int
    actual_version: int
    changes: list[StateChange] = Field(default_factory=list[StateChange])
    """Every change of the rejected turn (a turn's changes commit together or not at all),
    with the values it wanted to write, so the agent or the host can reconcile."""

    @property
    def rejected(self) -> list[str]:
        return [c.key for c in self.changes]

    def __str__(self) -> str:
        return (
            f"turn {self.turn} of {self.agent!r} wrote {self.owner_agent}:{self.key} from version "
            f"{self.expected_version}, but it was at version {self.actual_version}; the turn's "
            f"changes to {', '.join(self.rejected)} were not committed"
        )


class StateChanged(SparseModel):
    """Emitted after a commit: the new version of each changed key (``None``: deleted)."""

    agent: str
    session_id: str
    keys: dict[str, int | None]
    by: str
    """The agent whose turn made the change."""
    turn: int
    at: datetime
