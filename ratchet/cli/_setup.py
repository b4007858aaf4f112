"""``ratchet setup``: register Ratchet's search attributes on a namespace, once."""

from __future__ import annotations

import argparse


def register(commands: argparse._SubParsersAction) -> None:
    setup = commands.add_parser(
        "setup", help="register Ratchet's search attributes on a namespace (idempotent)"
    )
    setup.add_argument(
        "--address", help="Temporal address (default: TEMPORAL_ADDRESS or localhost:7233)"
    )
    setup.add_argument(
        "--namespace", help="Temporal namespace (default: TEMPORAL_NAMESPACE or default)"
    )
    setup.add_argument(
        "--profile", help="temporalio.envconfig profile (default: TEMPORAL_PROFILE or default)"
    )
    setup.set_defaults(func=setup_command)


async def setup_command(args: argparse.Namespace) -> int:
    return await setup(args)


async def setup(args: argparse.Namespace) -> int:
    """Print what was registered; a refusal raises ConfigurationError (cli.main prints it)."""
    from ratchet.client import AgentClient, ensure_search_attributes
    from ratchet.wire import SEARCH_ATTRIBUTES

    client = await AgentClient.connect(args.address, namespace=args.namespace, profile=args.profile)
    namespace = client.temporal.namespace
    added = await ensure_search_attributes(client.temporal)
    if not added:
        print(
            f"all {len(SEARCH_ATTRIBUTES)} search attributes are already registered on "
            f"namespace {namespace!r}; nothing to do."
        )
        return 0
    kinds = {key.name: key.indexed_value_type.name for key in SEARCH_ATTRIBUTES}
    print(f"registered {len(added)} search attribute(s) on namespace {namespace!r}:")
    for name in added:
        print(f"  {name} ({kinds[name].removeprefix('INDEXED_VALUE_TYPE_').lower()})")
    return 0
