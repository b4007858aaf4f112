"""A session's input, the requests its workflow takes, and what it answers."""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field
from temporalio.contrib.workflow_streams import WorkflowStreamState

from ratchet.types import (
    AgentSession,
    AgentStatus,
    ClientTool,
    Message,
    SparseModel,
    ThreadBase,
    View,
    whole_log,
)

from ._options import SessionOptions
from ._run_data import RunResult
from ._run_record import RunRecord, TurnMark


class SendRequest(BaseModel):
    messages: list[Message]
    request_id: str | None = None
    """The send's idempotency key: a send with an id the session has taken answers
    that message (see ``RecentRequests``)."""
    client_tools: list[ClientTool] = Field(default_factory=list)
    """Tools the caller runs, offered for this send's run (``RunOptions.client_tools``)."""


MAX_REQUEST_ID = 200
"""Characters a request id has at most (at least 1)."""


def request_id_problem(request_id: str, name: str = "request_id") -> str | None:
    """What makes ``request_id`` no request id, in a sentence naming it ``name``;
    ``None`` when it is one. An empty id is refused, never replaced by a fresh one:
    a retry of it would run its message again."""
    if not request_id:
        return f"{name} is empty; a request id is 1 to {MAX_REQUEST_ID} characters."
    if len(request_id) > MAX_REQUEST_ID:
        return (
            f"{name} is {len(request_id)} characters long; a request id is 1 to "
            f"{MAX_REQUEST_ID} characters."
        )
    return None


def new_request_id() -> str:
    """A fresh request id: a UUIDv7 (RFC 9562), so it tells when it was made and a
    session can refuse a retry older than what it remembers."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & (2**48 - 1)) << 80 | 0x7 << 76 | (rand >> 68) << 64 | 0b10 << 62
    value |= rand & (2**62 - 1)
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


_UUID7 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", re.I)


def request_made_ms(request_id: str) -> int | None:
    """When a UUIDv7 request id was made (ms since the epoch); ``None`` for other ids."""
    if not _UUID7.fullmatch(request_id):
        return None
    return int(request_id[:8] + request_id[9:13], 16)


def send_digest(messages: list[Message]) -> str:
    """What a send carries, as a short hash (the ids the client gave its messages
    aside): a request id sent again with another digest is another message."""
    body = [m.model_dump(mode="json", exclude={"id"}) for m in messages]
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:6]


class RecentRequests(SparseModel):
    """The request ids a session remembers, carried across continue-as-new."""

    entries: list[str] = Field(default_factory=list)
    """``"<key> <digest> <ticket> <taken_ms> [<made_ms>]"`` (numbers in base 36), oldest
    first (see ``workflows.idempotency``)."""
    horizon_ms: int = 0
    """When the newest UUIDv7 id the session forgot was made (ms since the epoch, its
    client's clock), or taken if that was earlier (the session's clock): one made no
    later may have been sent already."""


class Queued(SparseModel):
    ticket: int
    messages: list[Message]
    request_id: str | None = None
    """The request id the send came with (its run's ``run_started`` event names it)."""
    client_tools: list[ClientTool] = Field(default_factory=list)


class SendOutcome(SparseModel):
    """Where a sent message is: queued, running, or done (with its run's result)."""

    ticket: int
    state: Literal["queued", "running", "done", "failed", "forgotten", "unknown"]
    """``forgotten``: the message ran, but the session no longer holds its result."""
    result: RunResult | None = None
    """The run's result without ``session_id`` and ``thread_end`` (the client knows
    the one; the other is for a rerun's runs). Its answer (``final_response``) is
    there when small and recent; else it is in the thread (``final_at``), read back."""
    final_at: int | None = None
    """Position of the final response in the session's thread."""
    error: str | None = None
    error_type: str | None = None


class LogInfo(SparseModel):
    """Where a run's or session's thread is: its id, length, and its view."""

    thread_id: str
    length: int
    kind: str = "messages"
    cursor: str | None = None
    view: View = Field(default_factory=whole_log)
    base: ThreadBase | None = None
    """The workflow run that holds the messages before the answering run's own (a
    reader reads those from it without asking the answering run again); ``None``
    in a ``LogIndex``, whose run names it in its own input."""


class LogIndex(SparseModel):
    """Where a closed workflow run's part of a session's log is in that run's own
    history, so a reader takes it from there: a query to a closed run costs a
    worker a replay of the whole run. The run writes it as it ends, in its
    continue-as-new input (``SessionInput.previous_log``) or its result
    (``SessionStatus.log``)."""

    info: LogInfo
    """The log as the run left it (its length, view and cursor)."""
    start: int
    """Position of the run's first message (its base's length)."""
    entries: list[Message | str] = Field(default_factory=list)
    """The run's messages in log order, as pieces of its history: batches the
    history holds as they are (a send's messages, a turn's output, a tool
    activity's result, the thread the run started with), each by the ``batch_key``
    of its last message's id, several keys to a string; and, whole, the messages
    the workflow made itself (a rejection, an answer, a note)."""
    digest: str
    """``ids_digest`` of the run's messages: what a reader assembles must match it."""
    base: ThreadBase | None = None
    """Where the messages before ``start`` are, when not where the run's input said:
    the run re-anchored the thread (copied them into its own history)."""


KEY_CHARS = 8


def batch_key(message_id: str) -> str:
    """A batch's key in a ``LogIndex``: a short hash of its last message's id (a
    reader that finds two batches with one key asks the run instead)."""
    return hashlib.sha256(message_id.encode()).hexdigest()[:KEY_CHARS]


def ids_digest(messages: list[Message]) -> str:
    """A hash of the ids of ``messages``, in order."""
    digest = hashlib.sha256()
    for message in messages:
        digest.update(message.id.encode() + b"\n")
    return digest.hexdigest()[:16]


class CheckpointRequest(SparseModel):
    turn: int | None = None
    message: str | None = None
    """Id of a message: the checkpoint after the turn that added it."""


class CheckpointAnswer(SparseModel):
    """A workflow run's answer: the mark, or the earlier run to ask."""

    mark: TurnMark | None = None
    earlier: ThreadBase | None = None
    run_id: str
    """The workflow run that answered (it, and the runs its thread names, hold the log)."""
    thread_id: str
    kind: str = "messages"
    turns: int = 0
    """Turns the session (or run) has had (for error messages)."""
    from_turn: int | None = None
    """The first turn this run holds a mark of (for error messages)."""
    options: SessionOptions | None = None
    """A session's options (a fork's default); ``None`` for a run."""


class SessionInput(BaseModel):
    agent: str
    session: AgentSession | None = None
    options: SessionOptions = Field(default_factory=SessionOptions)
    runs: int = 0
    """Runs started by earlier workflow runs of this session (continue-as-new)."""
    session_id: str | None = None
    """The session's id (its workflow id)."""
    used_tokens: int = 0
    """Tokens used by earlier workflow runs of this session."""
    turns: int = 0
    cost_usd: float = 0.0
    stream: WorkflowStreamState | None = None
    """The live events carried over a continue-as-new."""
    tickets: int = 0
    """Messages sent to earlier workflow runs (tickets go on from here)."""
    queue: list[Queued] = Field(default_factory=list)
    results: list[SendOutcome] = Field(default_factory=list)
    requests: RecentRequests = Field(default_factory=RecentRequests)
    """The request ids of recent sends, so a retry after a continue-as-new answers
    the message it first sent instead of sending it again."""
    previous_log: LogIndex | None = None
    """Where the workflow run before this one (which continued as new) holds its
    part of the log in its history; for readers only (see ``LogIndex``)."""
    depends_since: datetime | None = None
    """When the oldest closed run this run's thread relies on closed (``None``:
    from a run of 0.1.0, which did not say): it re-anchors ``horizon`` after."""
    log_bytes: int = 0
    """About the JSON size of the log before this run's own messages."""
    previous_record: RunRecord | None = None
    """The turn marks and events index of the workflow run before this one; for
    readers of closed runs only (see ``wire._run_record``)."""


class SessionStatus(SparseModel):
    agent: str
    status: Literal["PENDING", "RUNNING", "CLOSED"]
    runs: int
    waiting: int = 0
    """Messages queued behind the run in progress."""
    current_run: str | None = None
    """The run in progress (``<session id>-run-<n>``)."""
    used_tokens: int = 0
    token_budget: int | None = None
    run_status: AgentStatus | None = None
    """The status of the run in progress."""
    waiting_for: list[str] = Field(default_factory=list)
    """What the run in progress waits for (approvals, questions), one line each."""
    turns: int = 0
    """Turns of the runs that finished."""
    run_turns: int = 0
    """Turns the run in progress has finished (the session's turn numbers go on from
    ``turns``: its next turn is ``turns + run_turns + 1``)."""
    run_tokens: int = 0
    """Tokens the run in progress has used so far (``used_tokens`` counts the runs
    that finished)."""
    cost_usd: float = 0.0
    approval_rules: list[str] = Field(default_factory=list)
    """The session's own approval rules, one line each (``allow pay``)."""
    retention_warning: str | None = None
    """Set when the session's log grows too large to keep past the namespace's
    retention without payload storage (see docs/sessions.md#retention)."""
    log: LogIndex | None = None
    """Only in the result of the session's last workflow run: where that run holds
    its part of the log in its history (see ``LogIndex``)."""
    record: RunRecord | None = None
    """Only in the result of the session's last workflow run: its turn marks and
    events index (see ``wire._run_record``)."""
