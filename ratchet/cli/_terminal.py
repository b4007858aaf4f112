"""Asking at the terminal: lines from stdin, and a person's decisions on what a run
waits for (``ratchet chat``, ``ratchet eval rerun --unrecorded ask``)."""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ratchet.client import RunHandle, SessionHandle
    from ratchet.types import PendingView

Prompt = Callable[[str], Awaitable[str]]
DECIDED_ELSEWHERE_POLL = 0.5
"""Seconds between looks at whether a call asked about here was decided elsewhere."""


class Stdin:
    """Lines from stdin, read by one daemon thread for the whole process (a prompt
    left open does not hold the process at exit), handed to whoever reads next: a
    prompt given up (the call was decided elsewhere) leaves the next line to the next
    prompt instead of swallowing it."""

    def __init__(self) -> None:
        self._lines: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._wakers: set[Callable[[], None]] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            line = sys.stdin.readline()
            self._lines.put(line)
            with self._lock:
                wakers = list(self._wakers)
            for wake in wakers:
                wake()
            if not line:
                return  # end of input

    async def next(self) -> str:
        """The next line ("" at the end of input, and at every read after it)."""
        loop = asyncio.get_running_loop()
        while True:
            ready = asyncio.Event()

            def wake(ready: asyncio.Event = ready) -> None:
                with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits
                    loop.call_soon_threadsafe(ready.set)

            with self._lock:
                self._wakers.add(wake)
            try:
                try:
                    line = self._lines.get_nowait()
                except queue.Empty:
                    await ready.wait()
                    continue
                if not line:
                    self._lines.put(line)  # the end stays the end for later reads
                return line
            finally:
                with self._lock:
                    self._wakers.discard(wake)


_stdin: Stdin | None = None


async def read_line(prompt: str) -> str:
    """A line from stdin without blocking the event loop; EOF reads as ``/quit``."""
    global _stdin
    print(prompt, end="", flush=True)
    if _stdin is None:
        _stdin = Stdin()
    line = await _stdin.next()
    if not line:
        print()  # end the prompt's line: the shell's prompt comes next
    return line.rstrip("\n") if line else "/quit"


async def decide(
    target: SessionHandle | RunHandle, item: PendingView, ask: Prompt, *, by: str = "cli"
) -> None:
    """Ask at the terminal about what ``target`` waits for, and pass the answer on.
    Decided elsewhere meanwhile (another terminal, the web page), the question is
    withdrawn with a note saying how and by whom."""
    from ratchet.errors import DecisionError

    action = item.action
    if action.kind == "input":
        question = f"{action.question}\nanswer> "
    else:
        question = f"approve {action.call.describe() if action.call else action.id}? [y/n] "
    asked = asyncio.ensure_future(ask(question))
    gone = asyncio.create_task(_decided_elsewhere(target, action.id))
    try:
        await asyncio.wait({asked, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        if not asked.done():
            asked.cancel()
        await asyncio.gather(asked, gone, return_exceptions=True)
    if asked.cancelled():
        print(f"\nnote: {action.id} was {await _verdict(target, action.id)} elsewhere", flush=True)
        return
    answer = asked.result()
    try:
        if action.kind == "input" and answer == "/quit":  # end of input: no answer
            await target.reject(action.id, "no answer at the terminal", by=by)
        elif action.kind == "input":
            await target.provide_input(action.id, answer, by=by)
        elif answer.strip().lower() in ("y", "yes"):
            await target.approve(action.id, by=by)
        else:
            await target.reject(action.id, "declined at the terminal", by=by)
    except DecisionError as e:  # decided elsewhere in the meantime
        print(f"note: {e}", file=sys.stderr)


async def _decided_elsewhere(target: SessionHandle | RunHandle, action_id: str) -> None:
    """Returns once ``action_id`` no longer waits (decided, or its run ended)."""
    while True:
        if all(p.action.id != action_id for p in await target.pending()):
            return
        await asyncio.sleep(DECIDED_ELSEWHERE_POLL)


async def _verdict(target: SessionHandle | RunHandle, action_id: str) -> str:
    decision = next((d for d in await target.decisions() if d.id == action_id), None)
    if decision is None:
        return "decided"
    verdict = (
        "answered"
        if decision.answer is not None
        else ("approved" if decision.approved else "rejected")
    )
    return f"{verdict} by {decision.by}" if decision.by else verdict
