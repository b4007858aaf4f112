"""Sessions sending under fault: workers SIGKILLed every few seconds while sessions
continue as new every few messages and clients retry (the CI test and
``bench/send_chaos.py`` both run it).

Workers are SIGKILLed every ``kill_every`` seconds, or after ``KILL_EVERY_SENDS``
answered sends if that comes first. Each session sends its messages one after the
other, each with its own request id; a send that fails for a moment
(``AnswerUnavailableError``, or any error that may pass) is sent again with the
same id. Then every message must be in its
session's thread once, with one answer, and its tool's side effect must belong to
one run only (one idempotency key: a message run twice has two).
"""

from __future__ import annotations

import asyncio
import random
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ratchet.client import AgentClient, SessionHandle
from ratchet.client._retries import passing
from ratchet.devserver import DevServer
from ratchet.errors import AnswerUnavailableError
from ratchet.testing import WorkerProcess
from ratchet.wire import SessionOptions
from ratchet.wire._session_data import new_request_id

from .logged_agents import EventLog

WORKERS = 2
KILL_EVERY_SENDS = 15
"""A kill comes at the latest after this many more sends were answered."""


@dataclass
class ChaosReport:
    seed: int
    sessions: int
    sends: int
    kills: int = 0
    retries: int = 0
    """Sends made again with the same request id after a failure that passes."""
    seconds: float = 0.0
    run_twice: list[str] = field(default_factory=list)
    """Messages whose side effect ran under more than one key (or that are twice in
    the thread)."""
    lost: list[str] = field(default_factory=list)
    """Messages sent that are not in the thread with their answer."""
    errors: list[str] = field(default_factory=list)


async def chaos_sends(
    server: DevServer,
    task_queue: str,
    log_path: Path,
    start_worker,
    *,
    seed: int,
    sessions: int = 5,
    sends: int = 20,
    continue_as_new_after_runs: int = 5,
    kill_every: tuple[float, float] = (3.0, 6.0),
) -> ChaosReport:
    """``start_worker()`` starts a worker process (not yet ready) on ``task_queue``."""
    rng = random.Random(seed)
    report = ChaosReport(seed=seed, sessions=sessions, sends=sessions * sends)
    client = await AgentClient.connect(server.address, task_queue=task_queue)
    workers: list[WorkerProcess] = [start_worker() for _ in range(WORKERS)]
    for worker in workers:
        await asyncio.to_thread(worker.wait_ready)
    options = SessionOptions(continue_as_new_after_runs=continue_as_new_after_runs)
    handles = [await client.start_session("chaos", options=options) for _ in range(sessions)]
    texts = {h.id: [f"{h.id[-8:]}-m{j}" for j in range(sends)] for h in handles}
    done = asyncio.Event()

    sent = asyncio.Condition()
    answered = [0]

    async def due(since: int) -> None:
        """After ``kill_every`` seconds, or as soon as ``KILL_EVERY_SENDS`` more sends
        were answered (a fast machine still sees its kills)."""
        async with sent:
            await sent.wait_for(lambda: done.is_set() or answered[0] >= since + KILL_EVERY_SENDS)

    async def killer() -> None:
        mark = 0
        while not done.is_set():
            try:
                await asyncio.wait_for(due(mark), rng.uniform(*kill_every))
            except TimeoutError:
                pass
            if done.is_set():
                return
            mark = answered[0]
            victim = workers.pop(rng.randrange(len(workers)))
            victim.kill()
            report.kills += 1
            fresh = start_worker()
            workers.append(fresh)
            await asyncio.to_thread(fresh.wait_ready)

    async def sender(session: SessionHandle) -> None:
        for text in texts[session.id]:
            request_id = new_request_id()
            while True:
                try:
                    result = await session.send(text, request_id=request_id)
                    break
                except AnswerUnavailableError:
                    report.retries += 1
                except Exception as e:
                    if not passing(e):
                        raise
                    report.retries += 1
            if result.output != f"done: {text}":
                report.errors.append(f"{text}: answered {result.output!r}")
            async with sent:
                answered[0] += 1
                sent.notify_all()

    started = time.monotonic()
    killing = asyncio.ensure_future(killer())
    try:
        outcomes = await asyncio.gather(*(sender(h) for h in handles), return_exceptions=True)
    finally:
        async with sent:
            done.set()
            sent.notify_all()
        await killing
    report.seconds = round(time.monotonic() - started, 1)
    report.errors += [f"{type(o).__name__}: {o}" for o in outcomes if isinstance(o, BaseException)]
    keys: dict[str, set[str]] = {}
    for record in EventLog(log_path).read():
        if record["kind"] == "effect":
            keys.setdefault(record["text"], set()).add(record["key"])
    for handle in handles:
        thread = [m.text for m in (await handle.thread()).messages if m.role != "tool"]
        counts = Counter(thread)
        for text in texts[handle.id]:
            if counts[text] > 1 or len(keys.get(text, ())) > 1:
                report.run_twice.append(text)
            elif counts[text] == 0 or counts[f"done: {text}"] == 0:
                report.lost.append(text)
        await handle.close()
    for worker in workers:
        worker.stop()
    return report


def signal_state(pid: int) -> str:
    """How process ``pid`` takes signals and where it waits (Linux), for a test whose
    child did not end on Ctrl-C: blocked (SigBlk), ignored (SigIgn) and caught
    (SigCgt) masks, and its state."""
    try:
        status = open(f"/proc/{pid}/status").read()  # noqa: SIM115 - read once, closed by GC
    except OSError as e:
        return f"pid {pid}: {e}"
    keep = ("State:", "SigBlk:", "SigIgn:", "SigCgt:", "Threads:")
    return f"pid {pid}: " + "; ".join(
        line.replace("\t", " ") for line in status.splitlines() if line.startswith(keep)
    )


async def ended(process: asyncio.subprocess.Process, seconds: float = 60) -> tuple[bytes, bytes]:
    """``process``'s output once it ended; if it runs on after ``seconds``, a failure
    that says how it takes signals (a child that ignores Ctrl-C hangs here)."""
    try:
        return await asyncio.wait_for(process.communicate(), seconds)
    except TimeoutError:
        raise AssertionError(f"still running: {signal_state(process.pid)}") from None


def as_from_a_terminal() -> None:
    """In a child, before exec: Ctrl-C as a terminal gives it (SIGINT's default action),
    also when the suite runs as a background job, whose children ignore SIGINT (POSIX;
    Python then installs no handler and the child never sees Ctrl-C)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
