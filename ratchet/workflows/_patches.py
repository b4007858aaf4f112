"""Every change to Ratchet's workflows since 0.1.0, and how a workflow asks for one.

A change that alters what replay compares goes behind ``workflow.patched``: a run
asks once, live, and Temporal records a marker in its history, so a replay of a run
recorded before the change takes the old path. Each marker is a billed action on
Temporal Cloud. ``AgentRun``, the run type Ratchet starts since 0.2, was born with
every change listed in ``BORN_WITH``: its histories were never recorded without
them, so it takes each without asking and records no marker. ``AgentRunWorkflow``,
sessions and workflows of your own still ask.

Some changes alter nothing that replay compares: the options of an activity the
workflow schedules (its priority, its retry policy) are not checked against the
history. They need no patch, but histories recorded while one was asked hold its
marker, and the SDK's core refuses a marker that no ``patched()`` call takes:
``replayed_patch`` takes it there, and records none live.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ratchet.wire import AGENT_RUN_WORKFLOW, RUN_WORKFLOW

RESULTS_WHEN_SETTLED = "ratchet-results-when-settled"
"""Results of the work a turn left go to the run's observers once in, before the next
turn's own events (before it, they came with that turn's completion)."""
OWNER_CARRIED = "ratchet-sub-agents-carry-owner"
"""A sub-agent's run carries its parent's owner and tenant (search attributes)."""
ANCHOR_ASKED = "ratchet-reanchor-asked"
"""A session re-anchors when asked (``ratchet sessions anchor``): sessions started on
0.1.0 have no timer in their open run."""
LONGER_FLUSH_INTERVAL = "ratchet-longer-flush-interval"
"""A run's counters go without a change of status at most every 2 minutes (10 s before)."""
RUN_LABEL_ON_TURN_EVENTS = "ratchet-turn-events-name-the-run"
"""A session's turns are told their run's label, for the events they send (they
carried the session's id before)."""
SUB_AGENTS_AS_AGENT_RUN = "ratchet-sub-agents-as-agent-run"
"""A sub-agent runs as an ``AgentRun``; it ran as an ``AgentRunWorkflow`` before (a
rerun batch's cases have their own patch: ``ratchet.evals._batch_cases``)."""
TURN_FAIRNESS = "ratchet-turn-fairness"
"""Replayed only: each turn carries a fairness key (its activity's priority)."""
THROTTLES_NOT_ATTEMPTS = "ratchet-throttles-not-attempts"
"""Replayed only: a turn is scheduled with unlimited attempts and counts its real
failures against ``max_attempts`` itself, so a provider's throttling uses up none."""

MOVE_TO_NEW_BUILD = "ratchet-session-moves-to-new-build"
"""A session moves to a newly current build (sessions only)."""
CLOSE_SHOWN_AT_ONCE = "ratchet-close-shown-at-once"
"""``close`` indexes the close itself (sessions only). Left to the main loop, the
upsert went before or after the Update's completion by the activation's job order,
which a replay need not repeat (a close in a continued run's first workflow task, on
a worker that never ran that run)."""
FAILED_RUNS_SPEND = "ratchet-failed-runs-spend-budget"
"""A session's failed run adds the tokens and cost of the turns it finished to the
session's (its ``token_budget`` too); before, only runs that answered did, so runs that
failed could spend the budget again and again (sessions only)."""
ATTEMPTS_CAPPED = "ratchet-delivery-attempts-capped"
"""A scheduled message's delivery gives up after ``DELIVERY_ATTEMPTS`` (``ScheduledSend``)."""

BORN_WITH: dict[str, frozenset[str]] = {
    AGENT_RUN_WORKFLOW: frozenset(
        {
            RESULTS_WHEN_SETTLED,
            OWNER_CARRIED,
            ANCHOR_ASKED,
            LONGER_FLUSH_INTERVAL,
            RUN_LABEL_ON_TURN_EVENTS,
            SUB_AGENTS_AS_AGENT_RUN,
            TURN_FAIRNESS,
            THROTTLES_NOT_ATTEMPTS,
        }
    ),
}
"""The changes a workflow type has had since its first run. A change made later is
asked for with ``workflow.patched`` in every type, and must not be added here."""


def patched(patch_id: str) -> bool:
    """``workflow.patched(patch_id)``, except in a workflow type born with the change,
    where it is how every run of the type goes and nothing is recorded."""
    return _born_with(patch_id) or workflow.patched(patch_id)


def replayed_patch(patch_id: str) -> None:
    """Take ``patch_id``'s marker where the history being replayed holds one; record
    no marker live. Call it where the change used to ask ``workflow.patched``."""
    if not _born_with(patch_id) and workflow.unsafe.is_replaying():
        workflow.patched(patch_id)


def _born_with(patch_id: str) -> bool:
    return patch_id in BORN_WITH.get(workflow.info().workflow_type, ())


def sub_agent_type() -> str:
    """The workflow type a sub-agent runs as: ``AgentRun``, or ``AgentRunWorkflow``
    where this workflow run started its sub-agents as those before. Not for a
    workflow's other child runs: a change asks a patch of its own (docs/deploying.md),
    as one asked together with this one would not replay histories recorded between."""
    return AGENT_RUN_WORKFLOW if patched(SUB_AGENTS_AS_AGENT_RUN) else RUN_WORKFLOW
