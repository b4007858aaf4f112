"""Names that workers, workflows and clients must agree on: workflow and activity
types, queries, the event stream's topic."""

AGENT_RUN_WORKFLOW = "AgentRun"
"""The workflow type of an agent run (since 0.2)."""
RUN_WORKFLOW = "AgentRunWorkflow"
"""The workflow type of agent runs started by Ratchet 0.1, still hosted: runs (and
schedules) started as it keep it, and so do sub-agents of a workflow that started
them as it. Start new runs as ``AGENT_RUN_WORKFLOW``: it records no patch markers."""
RUN_WORKFLOWS = (AGENT_RUN_WORKFLOW, RUN_WORKFLOW)
"""Every workflow type an agent run may have."""
SESSION_WORKFLOW = "AgentSession"
SCHEDULED_SEND_WORKFLOW = "ScheduledSend"
"""A schedule's firing that sends a message to a session (``AgentClient.schedule``)."""
RERUN_BATCH_WORKFLOW = "RerunBatch"
"""An evaluation's rerun of recorded sessions (``ratchet.evals``)."""
SEND_UPDATE = "send"

TURN_ACTIVITY = "ratchet.turn"
TOOL_ACTIVITY = "ratchet.tool"
DELIVER_ACTIVITY = "ratchet.deliver_scheduled_message"
ANCHOR_ACTIVITY = "ratchet.anchor"
"""Copies part of a thread's log into the calling run's history (re-anchoring)."""
HORIZON_ACTIVITY = "ratchet.horizon"
"""How long a closed run may be relied on: a safe part of the namespace's retention."""
ATTEMPTS_KEY = "ratchet.attempts"
"""Heartbeat details key under which each attempt of a turn records who ran it."""

THREAD_QUERY = "ratchet.thread"
STATE_QUERY = "ratchet.agent_state"
CHECKPOINT_QUERY = "ratchet.checkpoint"
REANCHOR_UPDATE = "ratchet.reanchor"
"""Asks a session to re-anchor its thread now (``ratchet sessions anchor``)."""
MOVE_SIGNAL = "ratchet.move"
"""Wakes an idle session so it moves to a newly current build (``ratchet deploy promote``)."""
THROTTLED = "ModelThrottled"
"""Failure type of a turn attempt its model's provider throttled (429, 529): retried
after the provider's ``retry-after``, not counted as a failed attempt."""
THREAD_NOT_CACHED = "ThreadNotCached"
"""Failure type of a local-activity turn whose worker lacks the thread (fast mode)."""
PAGE_BYTES = 384 * 1024
"""Largest page of messages one query answer carries (under the 512 KiB payload warning)."""

EVENTS_TOPIC = "events"
POLL_QUERY = "__temporal_workflow_stream_poll"
OFFSET_QUERY = "__temporal_workflow_stream_offset"


def session_run_id(session_id: str, number: int) -> str:
    """The id of a session's ``number``-th run (from 1): ``<session>-run-<n>``."""
    return f"{session_id}-run-{number}"


def parse_session_run_id(run_id: str) -> tuple[str, int] | None:
    """``(session id, number)`` of a ``session_run_id``; ``None`` for other ids."""
    session, _, number = run_id.rpartition("-run-")
    return (session, int(number)) if session and number.isdigit() else None
