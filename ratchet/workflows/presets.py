"""Timeouts and retry policies, named in one place."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from temporalio.common import RetryPolicy

from ratchet.agents.compact import CompactModel
from ratchet.agents.compaction import CompactionPolicy


class RunOptions(CompactModel):
    """How a run is executed. Every field has a default so old histories decode."""

    max_turns: int = 25
    turn_timeout: timedelta = timedelta(minutes=10)
    """Start-to-close timeout of one turn attempt (a model call and its tools)."""
    heartbeat_timeout: timedelta = timedelta(seconds=3)
    """A turn whose worker stops heartbeating for this long is retried elsewhere. A
    turn heartbeats every 0.4 of it when nothing else has (one RPC per 1.2 s at the
    default), and each step ``context.once`` records is acknowledged by the server."""
    max_attempts: int = 10
    """Attempts per turn before the run fails (0 means unlimited)."""
    initial_retry_interval: timedelta = timedelta(seconds=1)
    task_queue: str | None = None
    """Task queue for the turn activities; default: the workflow's own."""
    thread_mode: Literal["auto", "reference", "inline"] = "auto"
    """How a turn gets the thread. ``reference``: an id and version the worker
    resolves, so history grows linearly. ``inline``: the whole thread in every turn's
    input (quadratic history). ``auto``: inline while the thread is at most
    ``inline_thread_bytes``, by reference after that."""
    inline_thread_bytes: int = 2048
    thread_kind: str = "messages"
    """Kind of thread a new session gets: "messages", or "openai.responses" to let the
    OpenAI Responses API store the conversation (only its id travels)."""
    fast: bool = False
    """Run turns as local activities, in the workflow's worker: fewer round trips to
    the server, for interactive use. Threads still go by reference (the worker's
    cache has them; after a restart the turn is taken again with the thread inline).
    There are no heartbeats, so a turn lost with its worker is retried after
    ``turn_timeout``. Use it for short turns."""
    compaction: CompactionPolicy | None = None
    """Shrink the working thread when it passes a budget (see ratchet.agents.compaction)."""
    continue_as_new_after_turns: int | None = None
    """AgentRunWorkflow continues-as-new when Temporal suggests it (history size or
    events) or, if set, after this many turns in one workflow run."""
    approval_timeout: timedelta | None = None
    """How long a run waits for approvals and answers; then every undecided call is
    rejected (and the model told why). ``None``: wait for ever."""
    token_budget: int | None = None
    """Most tokens the run may use, its sub-agents included; past it the run fails
    with BudgetExceededError."""


def tool_retry_policy(options: RunOptions, max_attempts: int | None) -> RetryPolicy:
    return RetryPolicy(
        initial_interval=options.initial_retry_interval,
        backoff_coefficient=2.0,
        maximum_interval=timedelta(minutes=1),
        maximum_attempts=max_attempts if max_attempts is not None else options.max_attempts,
    )


def turn_retry_policy(options: RunOptions) -> RetryPolicy:
    return RetryPolicy(
        initial_interval=options.initial_retry_interval,
        backoff_coefficient=2.0,
        maximum_interval=timedelta(minutes=1),
        maximum_attempts=options.max_attempts,
    )
