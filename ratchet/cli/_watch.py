"""``ratchet watch``: follow a session (or a single run) live in the terminal."""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, TextIO

from ._common import add_connection_arguments, connect

if TYPE_CHECKING:
    from ratchet.client import AgentClient
    from ratchet.types import RunEvent

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
COLOURS = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}
STATUS_COLOUR = {
    "COMPLETED": "green",
    "FAILED": "red",
    "CANCELLED": "red",
    "INTERRUPTED": "yellow",
    "AWAITING_APPROVAL": "yellow",
    "AWAITING_INPUT": "yellow",
    "AWAITING_CLIENT": "yellow",
}


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("watch", help="follow a session or a run live")
    parser.add_argument("id", help="a session id (or a run's workflow id)")
    parser.add_argument("--no-color", action="store_true", help="plain text (also: NO_COLOR)")
    add_connection_arguments(parser)
    parser.set_defaults(func=watch_command)


async def watch_command(args: argparse.Namespace) -> int:
    client = await connect(args)
    return await watch(client, args)


async def events_of(client: AgentClient, workflow_id: str) -> AsyncIterator[RunEvent]:
    """A session's events with its runs', or a single run's."""
    if await client.kind_of(workflow_id) == "session":
        return client.get_session(workflow_id).events()
    return client.get_run(workflow_id).events()


class Printer:
    """Renders events as readable lines; a spinner runs while a turn works."""

    def __init__(self, out: TextIO, *, colour: bool, spinner: bool) -> None:
        self.out = out
        self.colour = colour
        self.spinner = spinner
        self._turn: int | None = None
        self._streaming = False
        self._spin: asyncio.Task[None] | None = None

    def paint(self, text: str, *styles: str) -> str:
        if not self.colour or not styles:
            return text
        codes = ";".join(COLOURS[s] for s in styles)
        return f"\033[{codes}m{text}\033[0m"

    def line(self, text: str) -> None:
        self._stop_spinner()
        if self._streaming:
            self.out.write("\n")
            self._streaming = False
        self.out.write(text + "\n")
        self.out.flush()

    def show(self, event: RunEvent) -> None:
        import ratchet.types as e  # here: ``ratchet --help`` loads no pydantic

        match event:
            case e.RunStarted():
                self.line(self.paint(f"▶ {_run_name(event.run_id)} · {event.agent}", "bold"))
            case e.StatusChanged():
                colour = STATUS_COLOUR.get(event.text or "")
                self.line(self.paint(f"  status {event.text}", *(c for c in [colour] if c)))
                for waiting in event.waiting:
                    self.line(self.paint(f"    waiting for {waiting}", "yellow"))
            case e.TurnStarted():
                self._turn = event.turn
                self._start_spinner(f"turn {event.turn}")
            case e.TextDelta():
                self._stop_spinner()
                if not self._streaming:
                    self.out.write("  ")
                    self._streaming = True
                self.out.write(event.text or "")
                self.out.flush()
            case e.ToolCalled():
                self.line(self.paint(f"  → {event.text}", "cyan"))
            case e.ToolResult():
                colour = "red" if event.data.is_error else "dim"
                self.line(self.paint(f"  ← {event.text}", colour))
            case e.Retry():
                self.line(
                    self.paint(
                        f"  ↻ turn {event.turn}, attempt {event.attempt}: "
                        f"{event.text or 'an earlier attempt failed'}; its text above is void",
                        "yellow",
                    )
                )
            case e.TurnCompleted():
                data = event.data
                did = "final answer" if data.final else ", ".join(data.tool_calls)
                self.line(
                    self.paint(
                        f"✓ turn {event.turn} · {data.tokens} tokens · {did or 'no tools'}",
                        "green",
                    )
                )
            case e.RunFinished():
                status = event.status.value if event.status is not None else ""
                self.line(self.paint(f"■ run {event.run_id} {status}", "bold"))
                if event.text:
                    self.line(event.text)
            case e.StateChangedEvent():
                self.line(self.paint(f"  • state {event.text} (by {event.data.by})", "dim"))
            case e.CustomEvent():
                body = event.text if event.text is not None else event.data
                self.line(self.paint(f"  • {body}", "dim"))

    def _start_spinner(self, label: str) -> None:
        self._stop_spinner()
        if self.spinner:
            self._spin = asyncio.ensure_future(self._spinning(label))

    def _stop_spinner(self) -> None:
        if self._spin is not None:
            self._spin.cancel()
            self._spin = None
            self.out.write("\r\033[K")

    async def _spinning(self, label: str) -> None:
        for frame in itertools.cycle(SPINNER):
            self.out.write(f"\r{self.paint(frame, 'cyan')} {label}")
            self.out.flush()
            await asyncio.sleep(0.1)

    def close(self) -> None:
        self._stop_spinner()
        if self._streaming:
            self.out.write("\n")
            self._streaming = False
        self.out.flush()


async def watch(client: AgentClient, args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    from ._waiting import connection_flags, interrupted, warn_without_worker, watching

    tty = out.isatty()
    colour = tty and not args.no_color and "NO_COLOR" not in os.environ
    printer = Printer(out, colour=colour, spinner=tty)
    events = await events_of(client, args.id)
    stalls = warn_without_worker(
        client.temporal,
        args.id,
        args.id,
        say=lambda note: printer.line(printer.paint(note, "yellow")),
    )
    try:
        async with watching(asyncio.create_task(stalls)):
            async for event in events:
                printer.show(event)
    except asyncio.CancelledError:  # Ctrl-C: only the watching stops
        printer.close()
        interrupted(args.id, [f"watch it again: ratchet watch {args.id}{connection_flags(args)}"])
        raise
    finally:
        printer.close()
    return 0


def _run_name(run_id: str | None) -> str:
    """``run 3 of SESSION`` for a session's run (its events name it ``SESSION-run-3``,
    which no command takes), else ``run RUN_ID``."""
    from ratchet.wire import parse_session_run_id

    parsed = parse_session_run_id(run_id or "")
    return f"run {parsed[1]} of {parsed[0]}" if parsed else f"run {run_id}"
