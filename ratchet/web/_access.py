"""Who may see and do what: each caller reaches only the sessions they own.

A session or run started through the front door is indexed with its owner and
tenant (search attributes ``AgentOwner``, ``AgentTenant``, set at start). Lists
are filtered by the visibility query an ``authorize`` callable returns; a route
on one session describes it and asks ``authorize`` about that owner. Someone
else's id answers exactly as an unknown id does (404), so nothing leaks.

Ids a caller chooses (``session_id``, an AG-UI ``threadId``) are scoped to them:
the session's id is ``<scope>-<id>``, the scope a hash of their tenant and
identity, so one user's id never collides with, or reveals, another's. Operators
use ids as they are; a session your backend started for a user (``owner=``) is
reached by its own id.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from ratchet.client import AgentClient, WorkflowSummary
from ratchet.errors import InvalidInputError, NotFoundError, SessionNotFoundError

from ._principal import Principal
from ._problems import Forbidden

Action = Literal["create", "list", "read", "send", "decide", "stop", "close", "fork", "delete"]
"""What a caller does: ``list`` and ``create`` ask with no session."""


@dataclass(frozen=True)
class Filter:
    """What a list holds: the sessions and runs of ``owner`` (any, if ``None``) in
    ``tenant`` (any, if ``None``). ``Filter()`` is everything."""

    owner: str | None = None
    tenant: str | None = None

    def where(self) -> dict[str, str | int | float | bool]:
        """The search-attribute clauses (``AgentClient.list_sessions(where=...)``)."""
        found: dict[str, str | int | float | bool] = {}
        if self.owner is not None:
            found["AgentOwner"] = self.owner
        if self.tenant is not None:
            found["AgentTenant"] = self.tenant
        return found


Decision = bool | Filter
Authorize = Callable[[Principal, Action, WorkflowSummary | None], "Decision | Awaitable[Decision]"]
"""``authorize(caller, action, target)``: for a session or run (``target``, its owner
and tenant included) ``True`` to allow; for ``list`` (no target) the ``Filter``
that becomes part of the visibility query (``True``: everything); ``False`` refuses
(404 for a target, 403 for a list or a create)."""


def owners_only(caller: Principal, action: Action, target: WorkflowSummary | None) -> Decision:
    """The default: users reach what they own, operators everything; a caller with a
    tenant stays in it. Sessions without an owner (started by the Python client or
    the CLI, or before owners existed) are the operators'."""
    if target is None:
        if caller.operator:
            return Filter(tenant=caller.tenant)
        return Filter(owner=caller.identity, tenant=caller.tenant)
    if caller.tenant is not None and target.tenant != caller.tenant:
        return False
    return caller.operator or (target.owner is not None and target.owner == caller.identity)


class Access:
    """The app's policy applied: lists' filters, one session's check, scoped ids."""

    def __init__(self, client: AgentClient, authorize: Authorize = owners_only) -> None:
        self._client = client
        self._authorize = authorize

    async def decide(
        self, caller: Principal, action: Action, target: WorkflowSummary | None
    ) -> Decision:
        found = self._authorize(caller, action, target)
        return await found if inspect.isawaitable(found) else found

    async def filter(self, caller: Principal, action: Action = "list") -> Filter:
        """The filter of what ``caller`` may list; ``Forbidden`` if nothing."""
        found = await self.decide(caller, action, None)
        if found is True:
            return Filter()
        if isinstance(found, Filter):
            return found
        raise Forbidden(f"{caller.identity} may not {action} sessions here.")

    def session_id(self, caller: Principal, session_id: str) -> str:
        """The id of ``caller``'s session ``session_id`` (scoped for a user)."""
        if caller.operator:
            return session_id
        prefix = scope(caller)
        return session_id if session_id.startswith(prefix) else prefix + session_id

    async def session(self, caller: Principal, session_id: str, action: Action) -> str:
        """The id of the session ``caller`` may ``action``: theirs by the id they
        chose (scoped), or by its own id (one started for them, ``owner=``, by your
        backend through the Python client). ``SessionNotFoundError`` alike for one
        that does not exist, is not a session, or is not theirs."""
        scoped = self.session_id(caller, session_id)
        for candidate in dict.fromkeys((scoped, session_id)):
            target = await self._find(candidate)
            if (
                target is not None
                and target.kind == "session"
                and await self._allows(caller, action, target)
            ):
                return candidate
        raise SessionNotFoundError(f"There is no session {session_id!r}.")

    async def run(self, caller: Principal, run_id: str, action: Action = "read") -> str:
        """As ``session``, for a run (a sub-agent's run: its parent's owner's too)."""
        target = await self._find(run_id)
        if target is None or target.kind != "run" or not await self._allows(caller, action, target):
            raise NotFoundError(f"There is no run {run_id!r}.")
        return run_id

    async def _allows(self, caller: Principal, action: Action, target: WorkflowSummary) -> bool:
        for _ in range(PARENTS):  # a sub-agent run started before owners were carried
            if target.owner is not None or target.parent is None:
                break
            parent = await self._find(target.parent)
            if parent is None:
                break
            target = parent
        return await self.decide(caller, action, target) is True

    async def _find(self, workflow_id: str) -> WorkflowSummary | None:
        try:
            return await self._client.describe(workflow_id)
        except (NotFoundError, InvalidInputError):  # an id no workflow could have
            return None


PARENTS = 4
"""Sub-agent levels an unowned run is traced up to find its owner."""


def scope(caller: Principal) -> str:
    """The prefix of the ids ``caller`` chooses: their tenant and identity, hashed
    (ids show in URLs and logs; the identity itself need not)."""
    key = f"{caller.tenant or ''}\0{caller.identity}".encode()
    return "u" + hashlib.sha256(key).hexdigest()[:16] + "-"
