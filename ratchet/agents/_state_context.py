"""Agent state: a keyed store whose changes commit with the turn that made them.

An agent reads and writes its state through ``context.state`` (a
:class:`StateContext`). Updates are visible for the rest of the turn and are
sent back with the turn's result; the engine commits them only when the turn
succeeds, so a failed attempt leaves nothing behind and its retry starts from
the last committed state. Each key has a version, raised at every commit.
"""

from __future__ import annotations

import secrets
import typing
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar, overload

from ratchet.errors import ShareTokenError, StateError, StateSchemaError
from ratchet.types import (
    SharedEntry,
    ShareToken,
    StateChange,
    StateConflict,
    StateEntry,
    type_adapter,
)

from ._serializers import JSONSerializer, StateSerializer

T = TypeVar("T")

DEFAULT_SERIALIZER = JSONSerializer()


_MISSING: Any = object()
UNSET: Any = object()
"""``get``'s second argument when none is given (``None`` is a valid default)."""


class StateContext:
    """The state of one agent, as one turn sees it.

    ``get`` returns a fresh copy of the value each time (what the next turn will
    see); change a value by calling ``update``. Values are read lazily: an agent
    that never touches its state costs nothing.
    """

    def __init__(
        self,
        entries: Mapping[str, StateEntry] | None = None,
        *,
        serializer: StateSerializer | None = None,
        shared: Sequence[SharedEntry] = (),
        conflicts: Sequence[StateConflict] = (),
        agent: str = "agent",
        session_id: str = "",
    ) -> None:
        self._committed: Mapping[str, StateEntry] = entries or {}
        self._serializer = serializer or DEFAULT_SERIALIZER
        self._shared = {s.token.id: s for s in shared}
        self._changes: dict[str, StateChange] = {}
        self._transient: dict[str, Any] = {}
        self._tokens: list[ShareToken] = []
        self._agent = agent
        self._session_id = session_id
        self.conflicts: list[StateConflict] = list(conflicts)
        """Earlier turns' changes that were rejected because a key had moved on."""

    @overload
    def get(self, key: str | ShareToken) -> Any: ...
    @overload
    def get(self, key: str | ShareToken, type: type[T], default: T | None = None) -> T | None: ...
    @overload
    def get(self, key: str | ShareToken, default: Any) -> Any: ...

    def get(  # pyright: ignore[reportInconsistentOverload] - the second argument is a type or a default
        self, key: str | ShareToken, type_or_default: Any = UNSET, default: Any = None
    ) -> Any:
        """The value of ``key`` (or of a shared key, given its token), or ``default``.

        ``get(key, MyModel)`` returns a ``MyModel``, converting stored plain data.
        """
        kind: Any = None
        if _is_type(type_or_default):
            kind = type_or_default
        elif type_or_default is not UNSET:
            default = type_or_default
        value = self._value(key)
        if value is _MISSING:
            return default
        if kind is None or (isinstance(kind, type) and isinstance(value, kind)):
            return value
        try:
            return type_adapter(kind).validate_python(value)
        except Exception as e:
            raise StateSchemaError(
                f"State key {self._name(key)!r} holds a {type(value).__qualname__} that is not a "
                f"valid {getattr(kind, '__qualname__', kind)}: {e}"
            ) from e

    def update(self, key: str | ShareToken, value: Any, *, persist: bool = True) -> None:
        """Set ``key`` for the rest of this turn; it is committed when the turn succeeds.

        The value is serialised now (a snapshot), so a value the serializer cannot
        store fails here, naming the key. ``persist=False`` keeps the value only
        for the rest of this turn and never serialises it (a connection, a client).
        """
        name = self._name(key)
        if not persist:
            if isinstance(key, ShareToken):
                raise ShareTokenError("A shared key cannot hold a value with persist=False.")
            self._transient[name] = value
            return
        target = self._target(key, write=True)
        try:
            data = self._serializer.serialize(value)
        except StateError as e:
            raise type(e)(f"State key {name!r}: {e}") from e
        self._transient.pop(name, None)
        self._changes[target] = self._change(key, data=data)

    def delete(self, key: str | ShareToken) -> None:
        """Remove ``key`` when this turn commits."""
        self._transient.pop(self._name(key), None)
        self._changes[self._target(key, write=True)] = self._change(key, deleted=True)

    def reset(self, key: str | ShareToken) -> None:
        """Forget this turn's changes to ``key``: back to its value at the start of the turn."""
        self._transient.pop(self._name(key), None)
        self._changes.pop(self._target(key, write=False), None)

    def keys(self) -> list[str]:
        """This agent's keys, as this turn sees them."""
        keys = dict.fromkeys([*self._committed, *self._transient])
        for change in self._changes.values():
            if change.token is None:
                if change.deleted:
                    keys.pop(change.key, None)
                else:
                    keys[change.key] = None
        return list(keys)

    def __contains__(self, key: str | ShareToken) -> bool:
        return self._value(key) is not _MISSING

    def version(self, key: str | ShareToken) -> int:
        """The committed version of ``key`` at the start of the turn (0: none)."""
        entry = self._entry(key)
        return entry.version if entry is not None else 0

    def share(self, key: str, *, write: bool = False) -> ShareToken:
        """A token that lets another agent of this session read ``key`` (and update
        it, if ``write``). It becomes valid when this turn commits."""
        if not isinstance(key, str) or not key:  # pyright: ignore[reportUnnecessaryIsInstance] - user input
            raise StateError("share() takes one of this agent's own keys (a non-empty string).")
        token = ShareToken(
            id=f"share_{secrets.token_hex(8)}",
            owner=self._session_id,
            agent=self._agent,
            key=key,
            write=write,
        )
        self._tokens.append(token)
        return token

    @property
    def share_tokens(self) -> list[ShareToken]:
        """Tokens for other agents' keys that this run was given."""
        return [s.token for s in self._shared.values()]

    # The engine's side.

    @property
    def changes(self) -> list[StateChange]:
        return list(self._changes.values())

    @property
    def new_tokens(self) -> list[ShareToken]:
        return list(self._tokens)

    def _value(self, key: str | ShareToken) -> Any:
        name = self._name(key)
        if not isinstance(key, ShareToken) and name in self._transient:
            return self._transient[name]
        change = self._changes.get(self._target(key, write=False))
        if change is not None:
            return (
                _MISSING if change.deleted else self._decode(name, change.data, change.serializer)
            )
        entry = self._entry(key)
        if entry is None:
            return _MISSING
        return self._decode(name, entry.data, entry.serializer)

    def _entry(self, key: str | ShareToken) -> StateEntry | None:
        if isinstance(key, ShareToken):
            return self._redeem(key).entry
        return self._committed.get(self._name(key))

    def _change(self, key: str | ShareToken, **fields: Any) -> StateChange:
        return StateChange(
            key=self._name(key),
            token=key.id if isinstance(key, ShareToken) else None,
            base_version=self.version(key),
            serializer=self._serializer.name,
            **fields,
        )

    def _target(self, key: str | ShareToken, *, write: bool) -> str:
        if isinstance(key, ShareToken):
            shared = self._redeem(key)
            if write and not shared.token.write:
                raise ShareTokenError(
                    f"The token for {shared.token} does not allow writes; ask its owner for "
                    "share(key, write=True)."
                )
            return f"{key.id}/{key.key}"
        return self._name(key)

    def _redeem(self, token: ShareToken) -> SharedEntry:
        shared = self._shared.get(token.id)
        if shared is None:
            raise ShareTokenError(
                f"This run was not given the share token for {token}; pass it when starting the "
                "run: run_agent(..., shared=[token]) or AgentRunner(..., shared=[token])."
            )
        return shared

    @staticmethod
    def _name(key: str | ShareToken) -> str:
        if isinstance(key, ShareToken):
            return key.key
        if not isinstance(key, str) or not key:  # pyright: ignore[reportUnnecessaryIsInstance] - user input
            raise StateError(f"A state key is a non-empty string or a ShareToken, not {key!r}.")
        return key

    def _decode(self, key: str, data: Any, serializer: str) -> Any:
        if serializer == DEFAULT_SERIALIZER.name:
            chosen: StateSerializer = DEFAULT_SERIALIZER
        elif serializer == self._serializer.name:
            chosen = self._serializer
        else:
            raise StateSchemaError(
                f"State key {key!r} was stored by the {serializer!r} serializer, and this agent "
                f"uses {self._serializer.name!r}; give the agent that serializer "
                "(Agent.state_serializer)."
            )
        try:
            return chosen.deserialize(data)
        except StateError as e:
            raise type(e)(f"State key {key!r}: {e}") from e


def _is_type(value: Any) -> bool:
    return isinstance(value, type) or typing.get_origin(value) is not None
