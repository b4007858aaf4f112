"""Finding runs and sessions: a visibility query read into one row each, from the
search attributes every run and session keeps (``AgentStatus``, ``AgentTokens``, ...)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel
from temporalio.client import Client, WorkflowExecution, WorkflowExecutionStatus

from ratchet.errors import InvalidInputError
from ratchet.types import AgentStatus
from ratchet.wire import OWNER_KEYS, RUN_WORKFLOWS, SESSION_WORKFLOW, identity_of, indexed_identity

from ._error_mapping import check_id, translated

STATUSES = tuple(status.value for status in AgentStatus)
_ATTRIBUTE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class WorkflowSummary(BaseModel):
    """One run or session as the list shows it."""

    id: str
    kind: Literal["session", "run"]
    agent: str | None = None
    status: str
    """``AgentStatus`` while it is open, else how it ended: how its workflow closed
    (``COMPLETED``, ``TERMINATED``...), or ``CANCELLED`` / ``FAILED`` for a run that
    was stopped or failed while its workflow completed."""
    turns: int | None = None
    tokens: int | None = None
    cost_usd: float | None = None
    started: datetime
    open: bool = True
    """Its workflow is running (not closed: completed, failed, terminated...)."""
    owner: str | None = None
    """Who started it through the front door (``AgentOwner``); ``None``: nobody did."""
    tenant: str | None = None
    parent: str | None = None
    """The workflow that started it (a sub-agent run's run or session)."""


async def describe(temporal: Client, workflow_id: str) -> WorkflowSummary:
    """``workflow_id``'s row, described (consistent at once, unlike a list);
    ``NotFoundError`` for a workflow that does not exist or was deleted."""
    check_id("run or session", workflow_id)
    with translated("run or session", workflow_id):
        return summary(await temporal.get_workflow_handle(workflow_id).describe())


async def kind_of(temporal: Client, workflow_id: str) -> Literal["session", "run"]:
    """Whether ``workflow_id`` names a session or a single run (the ids a list shows
    are both); ``NotFoundError`` that says what to do for neither."""
    check_id("run or session", workflow_id)
    with translated("run or session", workflow_id):
        description = await temporal.get_workflow_handle(workflow_id).describe()
    return "run" if description.workflow_type in RUN_WORKFLOWS else "session"


def type_clause(runs: bool) -> str:
    """The ``WorkflowType`` clause for sessions (and single runs with ``runs``)."""
    types = [SESSION_WORKFLOW, *RUN_WORKFLOWS] if runs else [SESSION_WORKFLOW]
    return f"WorkflowType IN ({', '.join(quoted(t) for t in types)})"


def status_clause(status: str) -> str:
    """The list filter for an ``AgentStatus``. A single run starts indexed RUNNING (so
    it upserts nothing when a worker takes it: an action fewer); until a worker
    completes its first workflow task Temporal has set no ``BuildIds`` on it, and it
    is PENDING, as a session is when idle."""
    if status not in STATUSES:
        raise InvalidInputError(f"status {status!r} must be one of {', '.join(STATUSES)}.")
    if status == "PENDING":
        return (
            "(AgentStatus = 'PENDING' OR (AgentStatus = 'RUNNING' AND BuildIds IS NULL "
            "AND ExecutionStatus = 'Running'))"
        )
    if status == "RUNNING":
        return "(AgentStatus = 'RUNNING' AND BuildIds IS NOT NULL)"
    return f"AgentStatus = '{status}'"


def agent_clause(agent: str) -> str:
    """``AgentName = '...'``, the name escaped."""
    return where_clause({"AgentName": agent})


def quoted(value: str) -> str:
    """``value`` as a visibility query string literal: a quote doubled, a backslash
    escaped, so that any string (a JWT subject, a tenant's name) filters as itself."""
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def where_clause(where: Mapping[str, str | int | float | bool]) -> str:
    """``Key = value AND ...`` for search attributes, each string value escaped (an
    owner or tenant as it is indexed: ``indexed_identity``)."""
    clauses = []
    for key, value in where.items():
        if not _ATTRIBUTE.fullmatch(key):
            raise InvalidInputError(
                f"{key!r} is not a search attribute name (letters, digits and _, "
                "not starting with a digit)."
            )
        if key in OWNER_KEYS and isinstance(value, str):
            literal = quoted(indexed_identity(value))
        elif isinstance(value, bool):
            literal = "true" if value else "false"
        elif isinstance(value, int | float):
            literal = repr(value)
        else:
            literal = quoted(value)
        clauses.append(f"{key} = {literal}")
    return " AND ".join(clauses)


def listing_query(
    *,
    runs: bool = False,
    status: str | Sequence[str] | None = None,
    agent: str | None = None,
    min_tokens: int | None = None,
    min_cost_usd: float | None = None,
    where: Mapping[str, str | int | float | bool] | None = None,
    query: str | None = None,
) -> str:
    """The visibility query ``AgentClient.list_sessions`` asks (its arguments)."""
    clauses = [type_clause(runs)]
    if status is not None:
        statuses = [status] if isinstance(status, str) else list(status)
        if not statuses:
            raise InvalidInputError("status=() matches nothing: give a status, or None.")
        either = " OR ".join(status_clause(s.upper()) for s in statuses)
        clauses.append(f"({either})" if len(statuses) > 1 else either)
    if agent is not None:
        clauses.append(agent_clause(agent))
    if min_tokens is not None:
        clauses.append(f"AgentTokens >= {int(min_tokens)}")
    if min_cost_usd is not None:
        clauses.append(f"AgentCostUsd >= {float(min_cost_usd)!r}")
    if where:
        clauses.append(where_clause(where))
    if query:
        clauses.append(f"({query})")
    return " AND ".join(clauses)


async def list_workflows(client: Client, query: str, *, limit: int = 100) -> list[WorkflowSummary]:
    """The workflows ``query`` finds, newest (latest started) first: of the ``limit``
    the server lists first (its own order puts open ones first, then the latest
    closed; visibility queries on SQL stores take no ORDER BY)."""
    rows = [summary(info) async for info in client.list_workflows(query, limit=limit)]
    return sorted(rows, key=lambda row: row.started, reverse=True)


def summary(info: WorkflowExecution) -> WorkflowSummary:
    """One row, from a listed or a described workflow."""
    found = {p.key.name: p.value for p in info.typed_search_attributes}
    return WorkflowSummary(
        id=info.id,
        kind="run" if info.workflow_type in RUN_WORKFLOWS else "session",
        agent=_str(found.get("AgentName")),
        status=_status(info.status, found.get("AgentStatus"), found.get("BuildIds")),
        turns=_int(found.get("AgentTurns")),
        tokens=_int(found.get("AgentTokens")),
        cost_usd=_float(found.get("AgentCostUsd")),
        started=info.start_time,
        open=info.status in (None, WorkflowExecutionStatus.RUNNING),
        owner=_identity(found.get("AgentOwner")),
        tenant=_identity(found.get("AgentTenant")),
        parent=info.parent_id,
    )


_ENDED_AS = {"CANCELLED", "FAILED"}
"""How a run can end while its workflow completes (stopped; failed as an answer)."""


def _status(
    closed_as: WorkflowExecutionStatus | None, agent_status: object, build_ids: object
) -> str:
    """``AgentStatus`` while the workflow is open (PENDING for a run no worker has
    taken yet: see ``status_clause``); then how it closed, except that a run stopped
    or failed inside a workflow that completed says so (not COMPLETED)."""
    if closed_as is None or closed_as == WorkflowExecutionStatus.RUNNING:
        if str(agent_status or "RUNNING") == "RUNNING" and not build_ids:
            return "PENDING"
        return str(agent_status or "RUNNING")
    if closed_as == WorkflowExecutionStatus.COMPLETED and str(agent_status) in _ENDED_AS:
        return str(agent_status)
    return closed_as.name


def _identity(value: object) -> str | None:
    return identity_of(str(value)) if value is not None else None


def _str(value: object) -> str | None:
    return str(value) if value is not None else None


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _int(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) else None
