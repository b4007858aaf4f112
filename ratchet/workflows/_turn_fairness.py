"""Each turn's fairness key: Temporal's matching dispatches a backlogged queue's
turns to each key in proportion to its weight, so one tenant's flood does not
starve the others (docs/fleet.md)."""

from __future__ import annotations

import hashlib

from temporalio import workflow
from temporalio.common import Priority

with workflow.unsafe.imports_passed_through():
    from ratchet.wire import AGENT_OWNER, AGENT_TENANT, RunOptions

TURN_FAIRNESS = "ratchet-turn-fairness"
"""Patch that histories recorded since turns carry a fairness key may hold (their
first task's marker); turns no longer record it (see ``turn_priority``)."""

MAX_KEY_BYTES = 64
"""Temporal's limit on a fairness key."""
HASH_CHARS = 16


def fairness_key(text: str) -> str:
    """``text``, or when it is longer than Temporal allows, a readable prefix and a
    hash of the whole (``<prefix>~<16 hex>``): distinct long ids stay distinct keys."""
    raw = text.encode()
    if len(raw) <= MAX_KEY_BYTES:
        return text
    digest = hashlib.sha256(raw).hexdigest()[:HASH_CHARS]
    prefix = raw[: MAX_KEY_BYTES - HASH_CHARS - 1].decode(errors="ignore")
    return f"{prefix}~{digest}"


def turn_priority(options: RunOptions, agent: str) -> Priority:
    """The priority of this run's turns: its options' key, else the owner, else the
    tenant (search attributes the front door set), else the agent.

    Unpatched: replay does not compare a scheduled activity's priority (a history
    recorded before turns had one replays), and a patch marker is a billed action
    per workflow run (Temporal Cloud bills a task's markers as one). Replaying, the
    call takes the marker of a history recorded while turns recorded it; live, it
    is not made, so no marker is written."""
    if workflow.unsafe.is_replaying():
        workflow.patched(TURN_FAIRNESS)
    found = workflow.info().typed_search_attributes
    key = options.fairness_key or found.get(AGENT_OWNER) or found.get(AGENT_TENANT) or agent
    return Priority(fairness_key=fairness_key(key), fairness_weight=options.fairness_weight)
