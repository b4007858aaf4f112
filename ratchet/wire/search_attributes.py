"""The search attributes Ratchet indexes runs and sessions by.

With them registered, the Temporal UI (and ``temporal workflow list --query``)
can find ``AgentStatus = "AWAITING_APPROVAL"`` or ``AgentTokens > 2000000`` in
seconds. The dev server registers them at start; on a cluster run
``ratchet setup`` once per namespace (or the ``temporal operator`` commands
from :func:`cli_commands`).
"""

from __future__ import annotations

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.client import Client
from temporalio.common import SearchAttributeKey
from temporalio.service import RPCError

from ratchet.errors import ConfigurationError

AGENT_NAME = SearchAttributeKey.for_keyword("AgentName")
AGENT_SESSION_ID = SearchAttributeKey.for_keyword("AgentSessionId")
AGENT_STATUS = SearchAttributeKey.for_keyword("AgentStatus")
AGENT_TURNS = SearchAttributeKey.for_int("AgentTurns")
AGENT_TOKENS = SearchAttributeKey.for_int("AgentTokens")
AGENT_COST_USD = SearchAttributeKey.for_float("AgentCostUsd")

SEARCH_ATTRIBUTES: tuple[SearchAttributeKey, ...] = (
    AGENT_NAME,
    AGENT_SESSION_ID,
    AGENT_STATUS,
    AGENT_TURNS,
    AGENT_TOKENS,
    AGENT_COST_USD,
)

# The names the ``temporal`` CLI and the server use for each kind.
_CLI_TYPE = {"KEYWORD": "Keyword", "INT": "Int", "FLOAT": "Double"}
_INDEXED = {
    "KEYWORD": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
    "INT": IndexedValueType.INDEXED_VALUE_TYPE_INT,
    "FLOAT": IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
}


def _kind(key: SearchAttributeKey) -> str:
    return key.indexed_value_type.name.removeprefix("INDEXED_VALUE_TYPE_").replace(
        "DOUBLE", "FLOAT"
    )


def dev_server_flags() -> list[str]:
    """``temporal server start-dev`` flags that register every attribute."""
    flags: list[str] = []
    for key in SEARCH_ATTRIBUTES:
        flags += ["--search-attribute", f"{key.name}={_CLI_TYPE[_kind(key)]}"]
    return flags


def cli_commands(namespace: str = "default") -> list[str]:
    """The ``temporal operator`` commands that register every attribute on a cluster."""
    return [
        f"temporal operator search-attribute create --namespace {namespace} "
        f"--name {key.name} --type {_CLI_TYPE[_kind(key)]}"
        for key in SEARCH_ATTRIBUTES
    ]


async def missing_search_attributes(client: Client) -> list[SearchAttributeKey]:
    """The attributes not registered on the client's namespace."""
    listed = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=client.namespace)
    )
    have = set(listed.custom_attributes)
    return [key for key in SEARCH_ATTRIBUTES if key.name not in have]


async def ensure_search_attributes(client: Client) -> list[str]:
    """Register the attributes the namespace lacks; returns the names it added.

    Raises :class:`ConfigurationError` with the commands to run when the server
    refuses (Temporal Cloud, or a client without operator rights).
    """
    try:
        missing = await missing_search_attributes(client)
        if missing:
            await client.operator_service.add_search_attributes(
                AddSearchAttributesRequest(
                    namespace=client.namespace,
                    search_attributes={key.name: _INDEXED[_kind(key)] for key in missing},
                )
            )
    except RPCError as e:
        commands = "\n  ".join(cli_commands(client.namespace))
        raise ConfigurationError(
            f"Cannot register Ratchet's search attributes on namespace "
            f"{client.namespace!r}: {e.message.rstrip('.')}. Register them once with:\n"
            f"  {commands}\n"
            "(on Temporal Cloud: tcld namespace search-attributes add, or the Cloud UI)."
        ) from e
    return [key.name for key in missing]
