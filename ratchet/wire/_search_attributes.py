"""The search attributes Ratchet indexes runs and sessions by.

With them registered, the Temporal UI (and ``temporal workflow list --query``)
can find ``AgentStatus = "AWAITING_APPROVAL"`` or ``AgentTokens > 2000000`` in
seconds. The dev server registers them at start; on a cluster run
``ratchet setup`` once per namespace (``ratchet.client._namespace_setup``), or the
``temporal operator`` commands from :func:`cli_commands`.
"""

from __future__ import annotations

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
