"""Patches that only replay asks about.

Some changes alter nothing that replay compares: the options of an activity the
workflow schedules (its priority, its retry policy) are not checked against the
history, so a history recorded before the change replays under it unpatched. Such a
change needs no patch, and a patch would cost: every workflow run that asks for one
writes its marker, a billed action on Temporal Cloud.

Histories recorded while such a change was still patched hold its marker, and the
SDK's core refuses a marker that no ``patched()`` call takes. ``replayed_patch``
takes it there, and writes none in a live run.
"""

from __future__ import annotations

from temporalio import workflow


def replayed_patch(patch_id: str) -> None:
    """Take ``patch_id``'s marker where the history being replayed holds one; write
    no marker live. Call it where the change used to ask ``workflow.patched``."""
    if workflow.unsafe.is_replaying():
        workflow.patched(patch_id)
