"""Registering Ratchet's search attributes on a namespace (an operator RPC), as
``ratchet worker`` does at start and ``ratchet setup`` does on demand."""

from __future__ import annotations

from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.client import Client
from temporalio.common import SearchAttributeKey
from temporalio.service import RPCError

from ratchet.errors import ConfigurationError
from ratchet.wire import INDEXED, SEARCH_ATTRIBUTES, cli_commands, kind_of


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
                    search_attributes={key.name: INDEXED[kind_of(key)] for key in missing},
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
