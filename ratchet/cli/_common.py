"""What every command shares: connection options, connecting, one-line errors.

This module and every command module import only the standard library at the
top, so ``ratchet --help`` stays fast; a command imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ratchet.client import AgentClient

DEFAULT_ADDRESS = "localhost:7233"


def add_connection_arguments(
    parser: argparse.ArgumentParser,
    *,
    task_queue: bool = True,
    queue_help: str = "the task queue runs start on: the one the agents' workers poll",
) -> None:
    parser.add_argument(
        "--address", help=f"Temporal address (default: TEMPORAL_ADDRESS or {DEFAULT_ADDRESS})"
    )
    parser.add_argument(
        "--namespace", help="Temporal namespace (default: TEMPORAL_NAMESPACE or default)"
    )
    if task_queue:
        parser.add_argument(
            "--task-queue",
            default="ratchet",
            type=queue_name,
            help=f"{queue_help} (default: ratchet)",
        )


def queue_name(text: str) -> str:
    """An argparse type: a task queue's name, not blank (no worker could poll it)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            f"{text!r} is empty: give a task queue's name (e.g. ratchet, or openai)"
        )
    return text


def address_of(args: argparse.Namespace) -> str:
    return getattr(args, "address", None) or os.environ.get("TEMPORAL_ADDRESS") or DEFAULT_ADDRESS


async def connect(args: argparse.Namespace, **options: object) -> AgentClient:
    from ratchet.client import AgentClient

    return await AgentClient.connect(
        getattr(args, "address", None),
        namespace=getattr(args, "namespace", None),
        task_queue=getattr(args, "task_queue", "ratchet"),
        **options,  # type: ignore[arg-type]
    )


def is_connection_failure(error: BaseException) -> bool:
    """No server running there: connecting failed (``ServerUnreachableError``), or
    Temporal's client lost the server later."""
    from ratchet.errors import ServerUnreachableError

    text = str(error)
    return isinstance(error, ServerUnreachableError) or (
        isinstance(error, RuntimeError)
        and ("Failed client connect" in text or "transport error" in text.lower())
    )


def no_server(args: argparse.Namespace, error: BaseException | None = None) -> int:
    reason = getattr(error, "reason", None) or (str(error).split("\n", 1)[0] if error else "")
    advice = (
        "Check the host's name in --address / TEMPORAL_ADDRESS."
        if getattr(error, "unresolved", False)  # ServerUnreachableError's
        else "Start one with `ratchet server` (a local dev server), or point --address / "
        "TEMPORAL_ADDRESS at yours."
    )
    reason = f" ({reason[:200]})" if reason else ""
    print(
        f"error: no Temporal server answers at {address_of(args)}{reason}. {advice}",
        file=sys.stderr,
    )
    return 1


def default_ui_url(address: str | None) -> str | None:
    """The Web UI a run's link points at: RATCHET_UI_URL, or the dev server's default
    (:8233) when the address is the local default. ``ratchet server --ui-port N``
    users set RATCHET_UI_URL=http://localhost:N (or pass --ui-url)."""
    explicit = os.environ.get("RATCHET_UI_URL")
    if explicit:
        return explicit
    host = (address or os.environ.get("TEMPORAL_ADDRESS") or DEFAULT_ADDRESS).rsplit(":", 1)
    if host[0] in ("localhost", "127.0.0.1") and host[-1] == "7233":
        return f"http://{host[0]}:8233"
    return None


def at_least_one(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    return _whole(text, 1)


def at_least_zero(text: str) -> int:
    """An argparse type: a whole number of at least 0."""
    return _whole(text, 0)


def _whole(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least {least}")
    return value
