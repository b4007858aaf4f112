"""Agent state by reference: a turn's input names committed values, workers cache them.

Every committed value carries the id of the write that produced it (its
``origin``, unique per turn result). A turn's input sends a key's value only
when it has no origin (state loaded from an export); otherwise it sends the
origin, and the worker takes the value from its cache, or asks the workflow
(``ratchet.agent_state`` query) on a miss. So an unchanged key costs a few
bytes per turn in history instead of its whole value, and a changed value is
written to history once, in the result of the turn that changed it.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from collections.abc import Mapping

from temporalio import activity
from temporalio.client import Client, WorkflowQueryFailedError

from ratchet.activities._owner import workflow_of
from ratchet.agents._engine import StateExport
from ratchet.errors import ThreadResolutionError
from ratchet.types import StateChange, StateEntry
from ratchet.wire import STATE_QUERY


def new_write_id() -> str:
    return f"w_{secrets.token_hex(8)}"


class StateCache:
    """Per-worker LRU of committed state values, by origin and key (bounded by count)."""

    def __init__(self, max_entries: int = 100_000) -> None:
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[str, StateEntry] = OrderedDict()

    def get(self, origin: str, key: str) -> StateEntry | None:
        entry = self._entries.get(f"{origin}/{key}")
        if entry is not None:
            self._entries.move_to_end(f"{origin}/{key}")
        return entry

    def put(self, key: str, entry: StateEntry) -> None:
        if entry.origin is None:
            return
        slot = f"{entry.origin}/{key}"
        self._entries[slot] = entry
        self._entries.move_to_end(slot)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def put_written(self, write_id: str, changes: list[StateChange]) -> None:
        """Cache a turn's own changes as they will be committed. If the commit is
        rejected, nothing will ever refer to ``write_id``, so the entries go unused."""
        for change in changes:
            if change.token is None and not change.deleted:
                self.put(
                    change.key,
                    StateEntry(
                        data=change.data,
                        version=change.base_version + 1,
                        serializer=change.serializer,
                        origin=write_id,
                    ),
                )

    def __len__(self) -> int:
        return len(self._entries)


async def resolve_state(
    cache: StateCache,
    client: Client,
    inline: Mapping[str, StateEntry],
    refs: Mapping[str, str],
    session_id: str,
) -> dict[str, StateEntry]:
    """The agent's committed state: ``inline`` entries plus ``refs`` (key -> origin)."""
    state = dict(inline)
    for key, entry in inline.items():
        cache.put(key, entry)
    missing: list[str] = []
    for key, origin in refs.items():
        entry = cache.get(origin, key)
        if entry is not None:
            state[key] = entry
            cache.hits += 1
        else:
            missing.append(key)
    if missing:
        cache.misses += len(missing)
        current = await _fetch(client, session_id)
        for key in missing:
            entry = current.get(key)
            if entry is None:
                # Deleted since the turn was scheduled: the turn sees it absent.
                continue
            cache.put(key, entry)
            state[key] = entry
    return state


async def _fetch(client: Client, session_id: str) -> dict[str, StateEntry]:
    workflow_id, run_id = workflow_of(activity.info())
    handle = client.get_workflow_handle(workflow_id, run_id=run_id)
    try:
        export = await handle.query(STATE_QUERY, result_type=StateExport)
    except WorkflowQueryFailedError as e:
        raise ThreadResolutionError(
            f"Workflow {workflow_id!r} could not give the agent's state: {e}"
        ) from e
    for agent in export.agents:
        if agent.session_id == session_id:
            return agent.entries
    raise ThreadResolutionError(f"Workflow {workflow_id!r} holds no agent session {session_id!r}.")
