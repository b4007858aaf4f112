"""How a Ratchet process ends: exit without interpreter finalisation (``run_main``,
``hard_exit``), and the grace period a stopping worker gives its turns.

Temporal's Rust runtime keeps threads alive until the process ends; tearing the
interpreter down around them can abort with "PyGILState_Release" (exit 134) about
half the time (temporalio/sdk-python#300). Short-lived commands flush their output
and leave with ``os._exit`` so their exit code is always the real one; user scripts
get the same through :func:`run_main`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import traceback
from collections.abc import Callable, Coroutine
from typing import Any, NoReturn

from ratchet.errors import RatchetError

__all__ = ["DEFAULT_GRACE_PERIOD", "DEFAULT_SERVER_WAIT", "hard_exit", "run_main"]

DEFAULT_GRACE_PERIOD = 20.0
"""Seconds a stopping worker gives its turns in flight (``build_worker``'s default
and ``ratchet worker --grace-period``'s; a plain number here, so the CLI names it in
``--help`` without loading Temporal). Docker Compose (``stop_grace_period``) and
Kubernetes (``terminationGracePeriodSeconds``) kill a container 30 s after SIGTERM by
default; the last 10 s are for cancelling what is still running, reporting it,
closing resources and flushing traces."""
DEFAULT_SERVER_WAIT = 10.0
"""Seconds a starting worker keeps trying to reach its server (``ratchet worker
--server-wait``): one started beside it (compose, a pod, a loaded machine) may ask
first."""


def hard_exit(code: int) -> NoReturn:
    """Flush traces, logs and output, then leave with ``code`` at once (``os._exit``):
    what ``run_main`` ends with, for entry points that run their own loop."""
    from ratchet.telemetry import flush_tracing  # os._exit skips the SDK's own atexit flush

    flush_tracing()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def run_main(main: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> NoReturn:
    """Run ``main(*args)`` with ``asyncio.run`` and exit with the script's real code.

    Use it instead of ``asyncio.run(main())`` at the bottom of a script that talks to
    Temporal. The exit code is what ``main`` returns (an int; ``None`` is 0), the code
    of a ``SystemExit`` it raises, 1 after an uncaught exception (its traceback is
    printed first; a Ratchet error, whose message says what to change, is printed as
    that message and the line of the script that met it) and 130 after Ctrl-C.
    Output is flushed, then the process leaves without interpreter finalisation,
    which can otherwise abort with exit 134 while Temporal's runtime threads are
    alive (temporalio/sdk-python#300).
    """
    try:
        returned = asyncio.run(main(*args))
        code = _exit_code(returned)
    except SystemExit as stop:
        code = _exit_code(stop.code)
    except (KeyboardInterrupt, asyncio.CancelledError):  # Ctrl-C (see ratchet.cli.main)
        code = 130
    except RatchetError as e:
        print(f"error: {e}", file=sys.stderr)
        if where := _script_line(e):
            print(f"  (at {where})", file=sys.stderr)
        code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    hard_exit(code)


def _script_line(error: BaseException) -> str | None:
    """``file:line in function`` of the innermost frame outside Ratchet and asyncio."""
    ours = (os.path.dirname(__file__), os.path.dirname(asyncio.__file__))
    found = None
    for frame in traceback.extract_tb(error.__traceback__):
        if not frame.filename.startswith(ours):
            found = f"{frame.filename}:{frame.lineno} in {frame.name}"
    return found


def _exit_code(value: object) -> int:
    """``sys.exit`` semantics: None is 0, an int is itself, anything else is printed
    to stderr and means 1."""
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    print(value, file=sys.stderr)
    return 1
