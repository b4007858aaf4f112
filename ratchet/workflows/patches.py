"""Patches of Ratchet's workflows, asked through one marker where possible.

Every ``workflow.patched`` that answers yes writes a marker and an upsert of
``TemporalChangeVersion`` to history (about 300 bytes each). A workflow started on
this release asks ``CURRENT`` first: one marker stands for every patch below it.
Histories recorded before it have no such marker, so they still answer each patch
the way they were recorded.
"""

from __future__ import annotations

from temporalio import workflow

CURRENT = "ratchet.v2"
"""Stands for ``ratchet.thread-ref``, ``ratchet.index`` and ``ratchet.index-batched``."""


def patched(patch_id: str) -> bool:
    return workflow.patched(CURRENT) or workflow.patched(patch_id)
