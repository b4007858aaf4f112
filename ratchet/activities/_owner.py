"""The workflow an activity runs for (temporalio types it optional: standalone
activities have none, and Ratchet's activities are never standalone)."""

from __future__ import annotations

from temporalio import activity


def workflow_of(info: activity.Info) -> tuple[str, str]:
    """The workflow id and run id of the workflow that scheduled this activity."""
    if info.workflow_id is None or info.workflow_run_id is None:
        raise RuntimeError(
            f"Activity {info.activity_type} runs outside a workflow; Ratchet's activities "
            "are scheduled by its workflows only."
        )
    return info.workflow_id, info.workflow_run_id
