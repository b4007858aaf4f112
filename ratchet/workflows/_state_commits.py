"""Workflow side of agent state: commit turns' changes, route share tokens.

Every agent in a workflow registers here (its ``AgentStateKeeper``). A turn's state changes are
checked and applied together, in workflow code (deterministic, rebuilt from
history on replay): either every changed key moves to its next version, or, if
any key has moved on since the turn read it, none does and the conflict is
reported. The ``ratchet.agent_state`` query answers with every agent's
committed state, for hosts outside the workflow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ratchet.agents._engine import AgentStateExport, StateExport
    from ratchet.errors import ShareTokenError
    from ratchet.types import (
        AgentRecord,
        SharedEntry,
        ShareToken,
        StateChange,
        StateChanged,
        StateConflict,
        StateEntry,
    )
    from ratchet.wire import STATE_QUERY

    from ._registry import query_registry

if TYPE_CHECKING:
    from ._ledger import RunLedger


StateHook = Callable[[StateChanged], None]
"""Called with each committed ``StateChanged`` (``RunHooks.state_hooks``)."""


class StateOwner(Protocol):
    """What the registry needs of an agent (an ``AgentStateKeeper``)."""

    @property
    def agent(self) -> str: ...

    @property
    def state(self) -> AgentRecord: ...

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


class AgentStateKeeper:
    """One agent's part of the registry: commits its turns' changes, grants and
    redeems its share tokens, and tells the run's state hooks what changed."""

    def __init__(
        self,
        ledger: RunLedger,
        *,
        shared: Sequence[ShareToken] = (),
        hooks: Sequence[StateHook] = (),
    ) -> None:
        self._ledger = ledger
        self._hooks = list(hooks)
        self.shared = list(shared)
        """Tokens for other agents' keys in this workflow that the agent's turns may use."""
        self.conflicts: list[StateConflict] = []
        """This run's conflicts (a turn's changes that were not committed)."""
        self.undelivered: list[StateConflict] = []
        """The conflict of the last turn, for the agent's next turn to see."""
        self._registry = state_registry()
        self._registry.register(self)

    @property
    def agent(self) -> str:
        return self._ledger.agent

    @property
    def state(self) -> AgentRecord:
        return self._ledger.state

    def state_changed(self, event: StateChanged) -> None:
        for hook in self._hooks:
            hook(event)

    def reset(self) -> None:
        self.conflicts = []
        self.undelivered = []

    def shared_entries(self) -> list[SharedEntry]:
        """The entries behind the shared tokens (raises ``ShareTokenError``)."""
        return self._registry.shared_entries(self.shared)

    def commit(self, turn: int, changes: Sequence[StateChange], write_id: str | None) -> None:
        conflict = self._registry.commit(self, turn, changes, write_id)
        self.undelivered = [conflict] if conflict else []
        if conflict:
            # Not lost: the agent's next turn sees it in context.state.conflicts.
            self.conflicts.append(conflict)
            workflow.logger.warning("State conflict: %s", conflict)

    def grant(self, tokens: Iterable[ShareToken]) -> list[ShareToken]:
        return self._registry.grant(self, tokens)

    def turn_input(self, *, inline: bool) -> dict:
        """The agent's state for a turn's input: values whose origin a worker can
        cache go by reference unless ``inline`` (a local activity cannot ask the
        workflow for them)."""
        state = self.state.session.state
        if inline:
            return {"state": state}
        values = {k: e for k, e in state.items() if e.origin is None}
        refs = {k: e.origin for k, e in state.items() if e.origin is not None}
        if not refs:
            return {"state": values}
        return {"state": values, "state_refs": refs, "session_id": self.state.session.info.id}
