"""One attempt of a turn: who runs it, what earlier attempts recorded, and its
heartbeats, which carry the steps it finishes (the turn's checkpoint)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from datetime import datetime
from typing import Any

from temporalio import activity

from ratchet.errors import ModelError, StaleAttemptError
from ratchet.wire import ATTEMPTS_KEY, AttemptRecord

from ._heartbeats import Heartbeats, TurnCancelled
from ._throttling import imposed, throttle_of

FAILURE_CHARS = 300
"""Characters of an attempt's failure kept for the next attempt to tell."""
CHECKPOINT_BUDGET = 512 * 1024
"""Most bytes of finished steps a turn keeps in its heartbeat details."""


class Attempt:
    """This attempt of the turn, as its heartbeat details record it: the attempts
    so far (``ATTEMPTS_KEY``) and the steps finished, by key."""

    def __init__(self, info: activity.Info, describe: str) -> None:
        progress = _earlier_progress(info.heartbeat_details)
        self.earlier: list[dict[str, Any]] = progress.pop(ATTEMPTS_KEY, [])
        """The attempts before this one, as far as their heartbeats reached the server."""
        self._started = info.started_time
        self._attempts = [*self.earlier, _this_attempt(info)]
        progress[ATTEMPTS_KEY] = self._attempts
        self._progress = progress
        self._sizes: dict[str, int] = {}
        self.beats: Heartbeats | None = None
        """``None`` for a local activity (fast mode), which has no heartbeats."""
        if not info.is_local:
            handle = activity.client().get_async_activity_handle(task_token=info.task_token)
            self.beats = Heartbeats(
                handle, info.heartbeat_timeout, lambda: self._progress, describe=describe
            )

    @property
    def completed(self) -> dict[str, Any]:
        """Steps earlier attempts finished, by key."""
        return {k: v for k, v in self._progress.items() if k != ATTEMPTS_KEY}

    @property
    def records(self) -> list[AttemptRecord]:
        return [AttemptRecord.model_validate(a) for a in self.earlier]

    def failure_before(self) -> str | None:
        """Why the attempt before this one failed, as far as it could tell."""
        if not self.earlier:
            return None
        last = self.earlier[-1]
        return f"throttled ({last['throttled']})" if last.get("throttled") else last.get("failure")

    def checkpoint(self, recorded: dict[str, Any]) -> None:
        """Keep every recorded step in the heartbeat details, in order, while they fit
        the budget (they are one payload); a step left out runs again if the turn is
        retried."""
        if self.beats is None:
            return
        progress = self._progress
        progress.clear()
        progress[ATTEMPTS_KEY] = self._attempts
        used = 0
        for key, value in recorded.items():
            if key not in self._sizes:
                self._sizes[key] = len(json.dumps(value, default=str))
            if used + self._sizes[key] <= CHECKPOINT_BUDGET:
                progress[key] = value
                used += self._sizes[key]
        self.beats.changed()

    async def alive_while(self, work: Coroutine[Any, Any, Any]) -> Any:
        """Run the agent's work while heartbeating, so a dead worker is noticed within
        the heartbeat timeout and a cancelled or stale attempt stops."""
        beats = self.beats
        if beats is None:
            return await work
        task = asyncio.create_task(work)
        alive = asyncio.create_task(beats.keep_alive())
        try:
            await asyncio.wait({task, alive}, return_when=asyncio.FIRST_COMPLETED)
            if alive.done():
                alive.result()  # StaleAttemptError or TurnCancelled
            return task.result()
        except (StaleAttemptError, TurnCancelled):
            raise  # the SDK reports nothing for this attempt
        except BaseException as e:
            if not isinstance(e, asyncio.CancelledError):  # the next attempt tells why
                self._attempts[-1].update(_outcome(e, self._started))
            beats.hand_over()  # the SDK reports this failure or cancellation
            raise
        finally:
            for t in (task, alive):
                t.cancel()
            await asyncio.gather(task, alive, return_exceptions=True)


def _outcome(error: BaseException, started: datetime) -> dict[str, Any]:
    """How the attempt ended: throttled by the provider (not a failure; with the
    seconds it imposed), or failed."""
    throttle = throttle_of(error)
    if throttle is None or not isinstance(error, ModelError):
        return {"failure": _failure(error)}
    now = datetime.now(started.tzinfo)
    return {"throttled": throttle, "throttled_s": round(imposed(error, started, now), 3)}


def _failure(error: BaseException) -> str:
    """``TypeError: ...``, short: it rides in the heartbeat details."""
    text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return text if len(text) <= FAILURE_CHARS else text[: FAILURE_CHARS - 1] + "…"


def _this_attempt(info: activity.Info) -> dict[str, Any]:
    worker = activity.client().identity if not info.is_local else ""
    return {"attempt": info.attempt, "worker": worker, "started_at": info.started_time.isoformat()}


def _earlier_progress(details: Any) -> dict[str, Any]:
    if details and isinstance(details[0], dict):
        return dict(details[0])
    return {}
