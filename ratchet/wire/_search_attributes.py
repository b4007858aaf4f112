"""The search attributes Ratchet indexes runs and sessions by.

With them registered, the Temporal UI (and ``temporal workflow list --query``)
can find ``AgentStatus = "AWAITING_APPROVAL"`` or ``AgentTokens > 2000000`` in
seconds. The dev server registers them at start; on a cluster run
``ratchet setup`` once per namespace (``ratchet.client._namespace_setup``), or the
``temporal operator`` commands from :func:`cli_commands`.
"""

from __future__ import annotations

import base64
import re

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.common import SearchAttributeKey

AGENT_NAME = SearchAttributeKey.for_keyword("AgentName")
"""The agent (after a handoff, the one that took over)."""
AGENT_SESSION_ID = SearchAttributeKey.for_keyword("AgentSessionId")
"""The session the run or session belongs to."""
AGENT_OWNER = SearchAttributeKey.for_keyword("AgentOwner")
"""Who started it through the front door (``ratchet web``), or the session it runs
for; set when the workflow starts and carried over continue-as-new."""
AGENT_TENANT = SearchAttributeKey.for_keyword("AgentTenant")
"""The owner's tenant, when the front door has tenants."""
AGENT_STATUS = SearchAttributeKey.for_keyword("AgentStatus")
"""An ``AgentStatus`` value (``RUNNING``, ``AWAITING_APPROVAL``, ``COMPLETED``, ...)."""
AGENT_TURNS = SearchAttributeKey.for_int("AgentTurns")
"""Turns taken (a session: all its runs)."""
AGENT_TOKENS = SearchAttributeKey.for_int("AgentTokens")
"""Tokens used (a session: all its runs)."""
AGENT_COST_USD = SearchAttributeKey.for_float("AgentCostUsd")
"""Dollars, when the models have a ``ModelPrice``."""

PLAIN = re.compile(r"[A-Za-z0-9@._+:|/=-]+")
"""An owner or tenant made of these is indexed as it is."""
OWNER_KEYS = (AGENT_OWNER.name, AGENT_TENANT.name)


def indexed_identity(value: str) -> str:
    """How an owner or tenant is stored in ``AgentOwner`` / ``AgentTenant``: as it is
    when a visibility query takes it literally, else ``~`` and its UTF-8 bytes in
    base64url. Temporal's query parser drops a quote at either end of a value, takes
    a backslash literally and fails on NUL, so ``alice'`` would match ``alice``."""
    if PLAIN.fullmatch(value):
        return value
    return "~" + base64.urlsafe_b64encode(value.encode()).decode().rstrip("=")


def identity_of(indexed: str) -> str:
    """The owner or tenant ``indexed_identity`` stored."""
    if not indexed.startswith("~"):
        return indexed
    data = indexed[1:]
    try:
        return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4)).decode()
    except ValueError:
        return indexed


SEARCH_ATTRIBUTES: tuple[SearchAttributeKey, ...] = (
    AGENT_NAME,
    AGENT_SESSION_ID,
    AGENT_OWNER,
    AGENT_TENANT,
    AGENT_STATUS,
    AGENT_TURNS,
    AGENT_TOKENS,
    AGENT_COST_USD,
)
"""Every attribute above (what ``ratchet setup`` registers on a namespace)."""

# The names the ``temporal`` CLI and the server use for each kind.
_CLI_TYPE = {"KEYWORD": "Keyword", "INT": "Int", "FLOAT": "Double"}
INDEXED = {
    "KEYWORD": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
    "INT": IndexedValueType.INDEXED_VALUE_TYPE_INT,
    "FLOAT": IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
}


def kind_of(key: SearchAttributeKey) -> str:
    return key.indexed_value_type.name.removeprefix("INDEXED_VALUE_TYPE_").replace(
        "DOUBLE", "FLOAT"
    )


def dev_server_flags() -> list[str]:
    """``temporal server start-dev`` flags that register every attribute."""
    flags: list[str] = []
    for key in SEARCH_ATTRIBUTES:
        flags += ["--search-attribute", f"{key.name}={_CLI_TYPE[kind_of(key)]}"]
    return flags


def cli_commands(namespace: str = "default") -> list[str]:
    """The ``temporal operator`` commands that register every attribute on a cluster."""
    return [
        f"temporal operator search-attribute create --namespace {namespace} "
        f"--name {key.name} --type {_CLI_TYPE[kind_of(key)]}"
        for key in SEARCH_ATTRIBUTES
    ]
