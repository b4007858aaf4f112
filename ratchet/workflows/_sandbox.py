"""Whether Ratchet's own workflows run in temporalio's workflow sandbox.

They run outside it unless ``RATCHET_WORKFLOW_SANDBOX=1``. The sandbox enters
itself for each activation and each payload it converts (a Ratchet turn entered it
about eleven times, a sixth of a turn's worker CPU: ``bench/README.md``), and it
guarded little of Ratchet's code: every ``ratchet`` module is passed through it, so
their module-level ``datetime``, ``random`` and ``uuid`` were the real ones all
along; it caught forbidden builtins (``open``) and imports made inside functions.
``tests/workflows/test_replay.py`` keeps that check: it replays every recorded history once
more inside the sandbox. Ratchet's workflows run only Ratchet's code (agents,
tools and policies run in activities), and their replay tests catch what is not
deterministic. Your own workflows that call ``run_agent`` keep whatever their
``workflow.defn`` says.
"""

from __future__ import annotations

import os

SANDBOXED = os.environ.get("RATCHET_WORKFLOW_SANDBOX", "") == "1"
"""Run AgentRun, AgentSession and RerunBatch in the sandbox (set before import)."""
