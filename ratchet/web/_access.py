"""Who may see and do what: each caller reaches only the sessions they own.

A session or run started through the front door is indexed with its owner and
tenant (search attributes ``AgentOwner``, ``AgentTenant``, set at start). Lists
are filtered by the visibility query an ``authorize`` callable returns; a route
on one session describes it and asks ``authorize`` about that owner. Someone
else's id answers exactly as an unknown id does (404), so nothing leaks.

Ids a caller chooses (``session_id``, an AG-UI ``threadId``) are scoped to them:
the session's id is ``<scope>-<id>``, the scope a hash of their tenant and
identity, so one caller's id never collides with, or reveals, another's. A session
is also reached by its own id (an operator's way in, and that of one your backend
started for a user with ``owner=``).
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from ratchet.client import AgentClient, WorkflowSummary
from ratchet.errors import InvalidInputError, NotFoundError, SessionNotFoundError

from ._principal import ANONYMOUS, Principal
from ._problems import Forbidden

Action = Literal["create", "list", "read", "send", "decide", "stop", "close", "fork", "delete"]
"""What a caller does: ``list`` and ``create`` ask with no session."""


@dataclass(frozen=True)
class Filter:
    """What a list holds: the sessions and runs of ``owner`` (anyone's, if ``None``)
    in ``tenant`` (``None``: those without a tenant), or in every tenant with
    ``all_tenants``. ``Filter(all_tenants=True)`` is everything."""

    owner: str | None = None
    tenant: str | None = None
    all_tenants: bool = False

    def where(self) -> dict[str, str | int | float | bool]:
        """The search-attribute equalities (``AgentClient.list_sessions(where=...)``)."""
        found: dict[str, str | int | float | bool] = {}
        if self.owner is not None:
            found["AgentOwner"] = self.owner
        if self.tenant is not None and not self.all_tenants:
            found["AgentTenant"] = self.tenant
        return found

    def query(self) -> str | None:
        """The clause ``where`` cannot say: no tenant."""
        return "AgentTenant IS NULL" if self.tenant is None and not self.all_tenants else None

    def holds(self, row: WorkflowSummary) -> bool:
        """Whether ``row`` is one this filter lets through (checked again on what the
        query returned: a list shows nothing its filter would not)."""
        if self.owner is not None and row.owner != self.owner:
            return False
        return self.all_tenants or row.tenant == self.tenant


EVERYTHING = Filter(all_tenants=True)
Decision = bool | Filter
Authorize = Callable[[Principal, Action, WorkflowSummary | None], "Decision | Awaitable[Decision]"]
"""``authorize(caller, action, target)``: for a session or run (``target``, its owner
and tenant included) ``True`` to allow. For ``list`` (no target) the ``Filter`` that
becomes part of the visibility query (``True``: everything). For ``create`` (no
target) anything but ``False`` allows. ``False`` refuses (404 for a target, 403 for
a list or a create)."""


def owners_only(caller: Principal, action: Action, target: WorkflowSummary | None) -> Decision:
    """The default: users reach what they own in their tenant (or, without one, what
    they own without a tenant); operators everything in their tenant; operators
    without a tenant everything. Sessions without an owner (started by the Python
    client or the CLI, or before owners existed) are the operators'."""
    everywhere = caller.operator and caller.tenant is None
    if target is None:
        if everywhere:
            return EVERYTHING
        return Filter(owner=None if caller.operator else caller.identity, tenant=caller.tenant)
    if everywhere:
        return True
    if target.tenant != caller.tenant:
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
            return EVERYTHING
        if isinstance(found, Filter):
            return found
        raise Forbidden(f"{caller.identity} may not {action} sessions here.")

    def session_id(self, caller: Principal, session_id: str) -> str:
        """The id of ``caller``'s session ``session_id``: scoped to them (as it is
        without auth: ``anonymous`` scopes nothing)."""
        if caller is ANONYMOUS:
            return session_id
        prefix = scope(caller)
        return session_id if session_id.startswith(prefix) else prefix + session_id

    async def session(
        self,
        caller: Principal,
        session_id: str,
        action: Action | tuple[Action, ...],
        *,
        runs: bool = False,
    ) -> str:
        """The id of the session ``caller`` may ``action`` (each of several, with one
        description of the workflow): theirs by the id they
        chose (scoped), or by its own id (one started for them, ``owner=``, by your
        backend through the Python client). ``SessionNotFoundError`` alike for one
        that does not exist, is not a session (nor, with ``runs``, a run), or is not
        theirs."""
        scoped = self.session_id(caller, session_id)
        for candidate in dict.fromkeys((scoped, session_id)):
            target = await self._find(candidate)
            if (
                target is not None
                and (target.kind == "session" or runs)
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

    async def _allows(
        self, caller: Principal, action: Action | tuple[Action, ...], target: WorkflowSummary
    ) -> bool:
        for _ in range(PARENTS):  # a sub-agent run started before owners were carried
            if target.owner is not None or target.parent is None:
                break
            parent = await self._find(target.parent)
            if parent is None:
                break
            target = parent
        actions = action if isinstance(action, tuple) else (action,)
        return all([await self.decide(caller, each, target) is True for each in actions])

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
