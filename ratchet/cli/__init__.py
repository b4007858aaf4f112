"""The ``ratchet`` command line, one module per command (``ratchet/cli/<command>.py``).

Each command module registers its parser with ``set_defaults(func=...)`` and imports
what it needs only when it runs, so ``ratchet --help`` loads nothing heavy.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import os
import sys

from ratchet import __version__

COMMANDS = (
    "server",
    "worker",
    "run",
    "sessions",
    "schedules",
    "watch",
    "web",
    "eval",
    "deploy",
    "setup",
    "fleet",
    "codec",
    "demo",
)


__all__ = ["build_parser", "entry", "main"]


def entry(argv: list[str] | None = None) -> None:
    """The ``ratchet`` console script: exits with the command's real code, every time
    (``argv``: the arguments, default ``sys.argv[1:]``)."""
    from ratchet.process import hard_exit

    hard_exit(main(argv))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ratchet", description="Durable agents on Temporal.")
    parser.add_argument("--version", action="version", version=f"ratchet {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"ratchet.cli._{name}").register(commands)
    for each in _parsers(parser):
        each.formatter_class = DefaultsHelp
    return parser


class DefaultsHelp(argparse.HelpFormatter):
    """Adds ``(default: X)`` to an option's help when it has a default to name and
    its help does not name it already."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default in (None, False, [], argparse.SUPPRESS) or "default" in text:
            return text
        return f"{text} (default: %(default)s)"


def _parsers(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result = args.func(args)
        if inspect.isawaitable(result):
            result = asyncio.run(result)  # type: ignore[arg-type]
        return int(result or 0)
    except BrokenPipeError:  # `ratchet ... | head`: the reader left; so do we, quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (KeyboardInterrupt, asyncio.CancelledError):
        # Ctrl-C. asyncio.run raises CancelledError instead of KeyboardInterrupt when the
        # command's task was cancelled more than once on the way (a timeout inside it
        # expiring as Ctrl-C lands); escaping main, it skipped the hard exit, and the
        # interpreter's own exit could hang on Temporal's runtime threads.
        return 130
    except Exception as e:  # noqa: BLE001 - one line for what a user can act on, else raise
        return _report(e, args)


def _report(error: Exception, args: argparse.Namespace) -> int:
    from ratchet.errors import RatchetError

    from ._common import is_connection_failure, no_server

    if is_connection_failure(error):
        return no_server(args, error)
    if isinstance(error, RatchetError):
        print(f"error: {error}", file=sys.stderr)
        return 1
    if type(error).__module__.startswith("temporalio"):
        cause = getattr(error, "cause", None)
        print(f"error: {getattr(cause, 'message', None) or error}", file=sys.stderr)
        return 1
    raise error
