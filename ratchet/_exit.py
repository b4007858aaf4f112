"""Exit without interpreter finalisation.

Temporal's Rust runtime keeps threads alive until the process ends; tearing the
interpreter down around them can abort with "PyGILState_Release" (exit 134) about
half the time (temporalio/sdk-python#300). Short-lived commands flush their output
and leave with ``os._exit`` so their exit code is always the real one.
"""

from __future__ import annotations

import os
import sys


def hard_exit(code: int) -> None:
    from ratchet.telemetry import flush_tracing  # os._exit skips the SDK's own atexit flush

    flush_tracing()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
