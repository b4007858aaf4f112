"""RunOptions and SessionOptions: how runs and sessions execute. Their ranges
are checked where they are written; a workflow checks them again when it starts."""

from __future__ import annotations

import difflib
from datetime import timedelta
from typing import Any, Literal, TypeGuard, get_args

from pydantic import Field

from ratchet.agents import CompactionPolicy, FitWindow
from ratchet.errors import InvalidOptionsError
from ratchet.types import ClientTool, SparseModel, is_decoding, tool_problems

REMOVED = {
    "thread_mode": "removed: every turn gets its thread by reference",
    "inline_thread_bytes": "removed: every turn gets its thread by reference",
    "recording": "removed: record a run's tools with a tool_interceptor",
}
"""Options that were removed, and why: a recorded payload may still carry them."""


class CheckedOptions(SparseModel):
    """Options whose names and ranges are checked when they are built in code
    (``__init__``), so a misspelt option or a bad value fails where it was written.
    Decoding (a recorded history, a client's request) does not check: payloads may
    carry options since removed, and workflows call ``check()`` when a run starts, so
    an old history still replays and a new run fails instead of wedging."""

    def __init__(self, **data: Any) -> None:
        written = not is_decoding()
        if written and (unknown := self.unknown_options(data)):
            name = type(self).__name__
            raise InvalidOptionsError(
                f"{name} has no option {'; no option '.join(unknown)}. Its options are its "
                "fields (docs/reference/options.md)."
            )
        super().__init__(**data)
        if written:
            self.check()

    @classmethod
    def unknown_options(cls, data: dict[str, Any], path: str = "") -> list[str]:
        """The keys of ``data`` (and of the options nested in it) that are no option,
        each with the option it is closest to: ``max_turn (did you mean max_turns?)``."""
        unknown: list[str] = []
        for key, value in data.items():
            field = cls.model_fields.get(key)
            if field is None:
                unknown.append(f"{path}{key}{cls._hint(key)}")
                continue
            nested = _nested(field.annotation)
            if isinstance(value, dict) and nested is not None:
                unknown += nested.unknown_options(value, f"{path}{key}.")
        return unknown

    @classmethod
    def _hint(cls, key: str) -> str:
        if key in REMOVED:
            return f" ({REMOVED[key]})"
        for name, field in cls.model_fields.items():
            nested = _nested(field.annotation)
            if nested is not None and key in nested.model_fields:
                return f" (it is an option of {name}: {name}={nested.__name__}({key}=...))"
        close = difflib.get_close_matches(key, list(cls.model_fields), n=1)
        return f" (did you mean {close[0]}?)" if close else ""

    def problems(self) -> list[str]:
        return []

    def check(self) -> None:
        """Raise ``InvalidOptionsError`` naming every field out of its range."""
        problems = self.problems()
        if problems:
            name = type(self).__name__
            raise InvalidOptionsError(
                f"{name} has {len(problems)} value(s) out of range: "
                + "; ".join(f"{name}.{p}" for p in problems)
                + "."
            )


def _nested(annotation: Any) -> type[CheckedOptions] | None:
    """The options class a field holds (``SessionOptions.run``), if one."""
    found = [t for t in (annotation, *get_args(annotation)) if _checked(t)]
    return found[0] if len(found) == 1 else None


def _checked(annotation: Any) -> TypeGuard[type[CheckedOptions]]:
    return isinstance(annotation, type) and issubclass(annotation, CheckedOptions)


def at_least(name: str, value: int | None, low: int, meaning: str = "") -> list[str]:
    if value is None or value >= low:
        return []
    return [f"{name}={value!r}, but it must be at least {low}{meaning}"]


def positive(name: str, value: timedelta | None, example: str) -> list[str]:
    if value is None or value > timedelta(0):
        return []
    return [f"{name}={value!r}, but it must be greater than 0 (e.g. {example})"]


FAIRNESS_WEIGHTS = MIN_WEIGHT, MAX_WEIGHT = 0.001, 1000.0
"""The fairness weights Temporal accepts, least and most."""
"""The fairness weights Temporal honours (it clamps others)."""


def fairness_problems(key: str | None, weight: float | None) -> list[str]:
    found = []
    if key is not None and not key.strip():
        found.append(f"fairness_key={key!r}, but it must not be blank (None: the default key)")
    if weight is not None and not MIN_WEIGHT <= weight <= MAX_WEIGHT:
        found.append(
            f"fairness_weight={weight!r}, but it must be between {MIN_WEIGHT} and "
            f"{MAX_WEIGHT:g} (e.g. 3.0 for three times a default key's share)"
        )
    return found


class InterceptorRef(SparseModel):
    """A tool interceptor registered on the workers, by name, and the config its
    factory builds it from (see ``ratchet.agents._interceptors``)."""

    name: str
    """A key of ``build_worker(..., tool_interceptors={...})``, or one a plugin brings."""
    config: Any = None
    """JSON-able data for the factory (it travels in every turn's input: keep it to
    what one run needs)."""


class RunOptions(CheckedOptions):
    """How a run is executed. Every field has a default so old histories decode."""

    max_turns: int = 25
    turn_timeout: timedelta = timedelta(minutes=10)
    """Start-to-close timeout of one turn attempt (a model call and its tools); also
    the most time a turn spends throttled by its model's provider, in total."""
    heartbeat_timeout: timedelta | None = timedelta(seconds=10)
    """A turn whose worker stops heartbeating for this long is retried elsewhere: a
    worker that dies is noticed within it (plus the retry interval). A turn sends a
    liveness heartbeat whenever the server has heard none for 0.8 of it (none during
    a model call shorter than 8 s at the default, then one per 8 s), and each step
    ``context.once`` records is acknowledged by the server. Each heartbeat is a
    billed action on Temporal Cloud: a shorter timeout notices a dead worker sooner
    and costs more (docs/capacity.md). ``None``: no heartbeat timeout and no liveness
    heartbeat (the peers' price); a turn lost with its worker is retried after
    ``turn_timeout``, and a cancelled turn learns of it only at its next checkpoint."""
    max_attempts: int = 10
    """Failed attempts per turn before the run fails (0 means unlimited). A provider's
    throttling (429, 529) is no failure: it waits out ``retry-after``, for at most
    ``turn_timeout`` in total (docs/fleet.md)."""
    initial_retry_interval: timedelta = timedelta(seconds=1)
    task_queue: str | None = None
    """Task queue for the turn activities; default: the workflow's own."""
    thread_kind: str = "messages"
    """Kind of thread a new session gets: "messages", or "openai.responses" to let the
    OpenAI Responses API store the conversation (only its id travels)."""
    fast: bool = False
    """Run turns as local activities, in the workflow's worker: fewer round trips to
    the server, for interactive use. A turn gets its new messages inline and the rest
    of the thread from the worker's cache; a worker that lacks part of it takes the
    turn again as a regular activity, which pages it in. There are no heartbeats, so
    a turn lost with its worker is retried after ``turn_timeout``. Use it for short
    turns."""
    compaction: CompactionPolicy | None = None
    """Shrink what each turn sends when it passes a budget (see
    ratchet.agents._compaction): the turn changes the thread's view, the log keeps
    every message."""
    fit_window: FitWindow | None = FitWindow()
    """Keep each prompt within the model's context window, after ``compaction``, and
    meet a service's overflow error by compacting harder and asking once more (see
    ``ratchet.agents._fit_window``). ``None``: send the prompt as it is, and let an
    overflow fail the run."""
    continue_as_new_after_turns: int | None = None
    """AgentRun continues-as-new when Temporal suggests it (history size or
    events) or, if set, after this many turns in one workflow run."""
    approval_timeout: timedelta | None = None
    """How long a run waits for approvals and answers; then every undecided call is
    rejected (and the model told why). ``None``: wait for ever."""
    token_budget: int | None = None
    """Most tokens the run may use, its sub-agents included; past it the run fails
    with BudgetExceededError."""
    tool_interceptor: InterceptorRef | None = None
    """Sees each tool call of the run before it runs, and may answer it without
    running the tool (``ratchet.agents._interceptors``; an evaluation's rerun answers
    calls from its recording this way)."""
    client_tools: list[ClientTool] = Field(default_factory=list[ClientTool])
    """Tools the run's caller runs (an AG-UI frontend's): offered to the model with
    every turn; the run waits for each call's result (``provide_tool_result``)."""
    client_tool_timeout: timedelta = timedelta(minutes=10)
    """How long a run waits for a client tool call's result; then the model reads an
    error saying none came."""
    fairness_key: str | None = None
    """The key the run's turns share their task queue's dispatches by, when it is
    backlogged (Temporal's fairness, docs/fleet.md). ``None``: the owner the run or
    session was started for, else its tenant, else the agent's name. A key longer
    than 64 bytes becomes a readable prefix and a hash."""
    fairness_weight: float | None = None
    """The key's share against other keys' (1.0 when ``None``; between 0.001 and 1000):
    a key of weight 3 gets three dispatches for each one of a key of weight 1."""

    def problems(self) -> list[str]:
        found = [
            *at_least("max_turns", self.max_turns, 1),
            *positive("turn_timeout", self.turn_timeout, "timedelta(minutes=10)"),
            *positive("heartbeat_timeout", self.heartbeat_timeout, "timedelta(seconds=10)"),
            *at_least("max_attempts", self.max_attempts, 0, " (0 means unlimited)"),
            *positive("initial_retry_interval", self.initial_retry_interval, "1 second"),
            *positive("approval_timeout", self.approval_timeout, "timedelta(hours=24), or None"),
            *positive("client_tool_timeout", self.client_tool_timeout, "timedelta(minutes=10)"),
            *tool_problems(self.client_tools),
            *at_least("token_budget", self.token_budget, 1, " (None: no budget)"),
            *at_least("continue_as_new_after_turns", self.continue_as_new_after_turns, 1),
            *fairness_problems(self.fairness_key, self.fairness_weight),
        ]
        if self.task_queue is not None and not self.task_queue.strip():
            found.append(
                f"task_queue={self.task_queue!r}, but it must name a queue (or be None: "
                "the workflow's own); no worker would take its turns"
            )
        chosen = "heartbeat_timeout" in self.model_fields_set  # the default yields: a
        # turn shorter than it is noticed dead at its turn_timeout (Temporal clamps)
        beat = self.heartbeat_timeout
        if chosen and beat is not None and timedelta(0) < self.turn_timeout <= beat:
            found.append(
                f"heartbeat_timeout={self.heartbeat_timeout!r}, but it must be shorter than "
                f"turn_timeout={self.turn_timeout!r} (a dead worker is noticed after it)"
            )
        return found


class SessionOptions(CheckedOptions):
    """How a session treats its runs. Every field has a default."""

    steering: Literal["queue", "interrupt", "reject"] = "queue"
    """A message sent while a run is in progress: ``queue`` runs it next; ``interrupt``
    stops that run at its next safe point (finished turns are kept, the turn in
    flight is cancelled) and runs the new message; ``reject`` refuses it with an
    error (the caller may retry later)."""
    run: RunOptions = Field(default_factory=RunOptions)
    """Options of every run the session starts (``run.compaction`` keeps the
    agent's view of a long conversation within budget; the log keeps it all)."""
    continue_as_new_after_runs: int | None = None
    """Continue as new after this many runs in one workflow run (besides when Temporal
    suggests it, or the run's history nears Temporal's limits)."""
    token_budget: int | None = None
    """Most tokens all the session's runs may use together; each run gets what is left."""
    compaction: CompactionPolicy | None = None
    """Keeps what the agent sees within budget (overrides ``run.compaction``): it
    applies before a turn whose view is over budget and changes only the view."""

    horizon: timedelta | None = None
    """How long the session may rely on one of its closed workflow runs: before that
    passes it copies what it still needs into its open run (re-anchoring), so
    Temporal's retention never takes its conversation. ``None``: the worker's
    (``build_worker(horizon=)``), by default half the namespace's retention."""

    def problems(self) -> list[str]:
        return [
            *(f"run.{p}" for p in self.run.problems()),
            *positive("horizon", self.horizon, "timedelta(days=15)"),
            *at_least("continue_as_new_after_runs", self.continue_as_new_after_runs, 1),
            *at_least("token_budget", self.token_budget, 1, " (None: no budget)"),
        ]
