"""Workflow side of agent state: commit turns' changes, route share tokens.

Every ``AgentRunner`` in a workflow registers here. A turn's state changes are
checked and applied together, in workflow code (deterministic, rebuilt from
history on replay): either every changed key moves to its next version, or, if
any key has moved on since the turn read it, none does and the conflict is
reported. The ``ratchet.agent_state`` query answers with every agent's
committed state, for hosts outside the workflow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ratchet.agents.state import AgentState
    from ratchet.agents.state_context import (
        SharedEntry,
        ShareToken,
        StateChange,
        StateChanged,
        StateConflict,
        StateEntry,
    )
    from ratchet.agents.state_export import AgentStateExport, StateExport
    from ratchet.errors import ShareTokenError
    from ratchet.wire.names import STATE_QUERY

    from ._registry import query_registry


StateHook = Callable[[StateChanged], None]
"""Called with each committed ``StateChanged`` (``AgentRunner.state_hooks``)."""


class StateOwner(Protocol):
    """What the registry needs of an ``AgentRunner``."""

    agent: str
    state: AgentState

    def state_changed(self, event: StateChanged) -> None: ...


class StateRegistry:
    """The agents of one workflow, with their state and the tokens they granted."""

    def __init__(self) -> None:
        self._owners: list[StateOwner] = []

    def register(self, owner: StateOwner) -> None:
        self._owners.append(owner)

    def export(self) -> StateExport:
        return StateExport(
            workflow_id=workflow.info().workflow_id,
            exported_at=workflow.now(),
            agents=[
                AgentStateExport(
                    agent=o.agent,
                    session_id=o.state.session.info.id,
                    entries=o.state.session.state,
                    shares=list(o.state.session.shares.values()),
                )
                for o in self._owners
            ],
        )

    def grant(self, owner: StateOwner, tokens: Iterable[ShareToken]) -> list[ShareToken]:
        """Record tokens on ``owner``'s keys (made by its turn, or by the host)."""
        session = owner.state.session
        granted = [t.model_copy(update={"owner": session.info.id}) for t in tokens]
        if granted:
            shares = {**session.shares, **{t.id: t for t in granted}}
            owner.state.session = session.model_copy(update={"shares": shares})
        return granted

    def resolve(self, token: ShareToken) -> tuple[StateOwner, ShareToken]:
        """The owner of a token and the token as granted (the holder's copy may claim more)."""
        found = self._granted(token.id)
        if found is not None:
            return found
        raise ShareTokenError(
            f"The share token for {token} was not granted in this workflow. A token is "
            "redeemable by agents of the session that made it, once the turn that made it "
            "has committed."
        )

    def _granted(self, token_id: str) -> tuple[StateOwner, ShareToken] | None:
        for owner in self._owners:
            granted = owner.state.session.shares.get(token_id)
            if granted is not None:
                return owner, granted
        return None

    def shared_entries(self, tokens: Sequence[ShareToken]) -> list[SharedEntry]:
        entries = []
        for token in tokens:
            owner, granted = self.resolve(token)
            entries.append(
                SharedEntry(token=granted, entry=owner.state.session.state.get(granted.key))
            )
        return entries

    def commit(
        self,
        writer: StateOwner,
        turn: int,
        changes: Sequence[StateChange],
        write_id: str | None = None,
    ) -> StateConflict | None:
        """Apply one turn's changes all together, or none of them and say why."""
        if not changes:
            return None
        targets: list[tuple[StateOwner, StateChange]] = []
        for change in changes:
            owner = writer
            if change.token is not None:
                found = self._granted(change.token)
                if found is None or not found[1].write or found[1].key != change.key:
                    raise ShareTokenError(
                        f"Turn {turn} of {writer.agent!r} wrote {change.key!r} through a share "
                        "token that does not grant that write."
                    )
                owner = found[0]
            targets.append((owner, change))
        for owner, change in targets:
            entry = owner.state.session.state.get(change.key)
            actual = entry.version if entry else 0
            if actual != change.base_version:
                return StateConflict(
                    agent=writer.agent,
                    turn=turn,
                    key=change.key,
                    owner_agent=owner.agent,
                    expected_version=change.base_version,
                    actual_version=actual,
                    changes=list(changes),
                )
        now = workflow.now()
        by_owner: dict[int, tuple[StateOwner, dict[str, int | None]]] = {}
        for owner, change in targets:
            session = owner.state.session
            state = dict(session.state)
            version: int | None = None
            if change.deleted:
                state.pop(change.key, None)
            else:
                version = change.base_version + 1
                # Another agent's key (changed through a token) stays inline: the
                # writer's worker cached it, the owner's workers may not have.
                origin = write_id if owner is writer else None
                state[change.key] = StateEntry(
                    data=change.data, version=version, serializer=change.serializer, origin=origin
                )
            owner.state.session = session.model_copy(update={"state": state})
            by_owner.setdefault(id(owner), (owner, {}))[1][change.key] = version
        for owner, keys in by_owner.values():
            owner.state_changed(
                StateChanged(
                    agent=owner.agent,
                    session_id=owner.state.session.info.id,
                    keys=keys,
                    by=writer.agent,
                    turn=turn,
                    at=now,
                )
            )
        return None


def state_registry() -> StateRegistry:
    """This workflow's registry, installing its query handler on first use."""
    return query_registry(STATE_QUERY, StateRegistry, "export")
