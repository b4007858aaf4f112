"""Ratchet's commands in child processes: a worker to SIGKILL mid-turn, a web server
to kill mid-stream."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Self

from ratchet.devserver import DevServer, env_with_address


class ChildProcess:
    """``argv`` in a child process talking to ``server``.

    Its output is collected line by line (``lines``); ``on_line`` sees each line
    as it arrives, on a reader thread. ``kill()`` sends SIGKILL, as a crashed
    machine would; ``send_signal()`` sends SIGTERM (or another signal) and returns, and
    ``wait_exit()`` waits for the exit code; ``stop()`` asks it to finish and exit.
    """

    def __init__(
        self,
        argv: list[str],
        server: DevServer,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        on_line: Callable[[str], None] | None = None,
    ) -> None:
        self.lines: list[str] = []
        self._on_line = on_line
        self._changed = threading.Condition()
        self.process = subprocess.Popen(
            argv,
            cwd=cwd,
            env={**os.environ, **env_with_address(server), **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        threading.Thread(target=self._pump, daemon=True).start()

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()
            if self._on_line is not None:
                self._on_line(line.rstrip("\n"))
        with self._changed:
            self._changed.notify_all()

    def count(self, text: str) -> int:
        return sum(text in line for line in self.lines)

    def wait_for(self, text: str, count: int = 1, timeout: float = 60) -> Self:
        """Block until ``count`` output lines contain ``text``; raises, with the
        output so far, if the process exits or ``timeout`` seconds pass first."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self.count(text) < count:
                left = deadline - time.monotonic()
                if self.process.poll() is not None or left <= 0:
                    why = f"exited with code {self.process.returncode}" if left > 0 else "timed out"
                    raise AssertionError(
                        f"process {self.pid} {why} before printing {text!r} x{count}:\n"
                        + "".join(self.lines[-40:])
                    )
                self._changed.wait(min(left, 0.5))
        return self

    def kill(self) -> float:
        """SIGKILL; returns the wall-clock time of the kill."""
        self.process.kill()
        killed_at = time.time()
        self.process.wait()
        return killed_at

    def send_signal(self, signum: int = signal.SIGTERM) -> None:
        """Send ``signum`` (a worker drains on SIGTERM and SIGINT) without waiting."""
        self.process.send_signal(signum)

    def wait_exit(self, timeout: float = 60) -> int:
        """The exit code; raises, with the output so far, if the process is still
        running after ``timeout`` seconds."""
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"process {self.pid} still running after {timeout:g} s:\n"
                + "".join(self.lines[-40:])
            ) from None

    def stop(self, grace: float = 20) -> None:
        """SIGTERM (the worker drains), then SIGKILL after ``grace`` seconds."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class WorkerProcess(ChildProcess):
    """``python -m ratchet.worker --agents MODULE:NAME`` against ``server``."""

    def __init__(
        self,
        server: DevServer,
        task_queue: str,
        agents: str,
        *extra: str,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        on_line: Callable[[str], None] | None = None,
    ) -> None:
        command = [sys.executable, "-m", "ratchet.worker", "--agents", agents]
        argv = [*command, "--task-queue", task_queue, *extra]
        super().__init__(argv, server, env=env, cwd=cwd, on_line=on_line)

    def wait_ready(self, timeout: float = 60) -> WorkerProcess:
        return self.wait_for("worker ready", timeout=timeout)
