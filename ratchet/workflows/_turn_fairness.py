"""Each turn's fairness key: Temporal's matching dispatches a backlogged queue's
turns to each key in proportion to its weight, so one tenant's flood does not
starve the others (docs/fleet.md)."""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import Priority

with workflow.unsafe.imports_passed_through():
    from ratchet.wire import AGENT_OWNER, AGENT_TENANT, RunOptions, fairness_key

    from ._patches import TURN_FAIRNESS, replayed_patch


def turn_priority(options: RunOptions, agent: str) -> Priority:
    """The priority of this run's turns: its options' key, else the owner, else the
    tenant (search attributes the front door set), else the agent.

    Unpatched: replay does not compare a scheduled activity's priority (a history
    recorded before turns had one replays), and a patch marker is a billed action
    per workflow run (``_patches``)."""
    replayed_patch(TURN_FAIRNESS)
    found = workflow.info().typed_search_attributes
    key = options.fairness_key or found.get(AGENT_OWNER) or found.get(AGENT_TENANT) or agent
    return Priority(fairness_key=fairness_key(key), fairness_weight=options.fairness_weight)
