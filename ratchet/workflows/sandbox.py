"""Whether Ratchet's own workflows run in temporalio's workflow sandbox.

They run outside it unless ``RATCHET_WORKFLOW_SANDBOX=1``. The sandbox guards
workflow code against calls that are not deterministic (the clock, random numbers,
I/O) by re-importing a workflow's modules for each run and entering itself for
each activation and each payload it converts: a Ratchet turn entered it about
eleven times, a large share of a turn's worker CPU (``bench/results/``). Ratchet's
workflows run only Ratchet's code (agents, tools and policies run in activities),
every one has replay tests, and CI replays those histories, and runs the workflow
tests, with the sandbox on, so a call it forbids is still caught. Your own
workflows that call ``run_agent`` keep whatever their ``workflow.defn`` says.
"""

from __future__ import annotations

import os

SANDBOXED = os.environ.get("RATCHET_WORKFLOW_SANDBOX", "") == "1"
"""Run AgentRunWorkflow, AgentSession and RerunBatch in the sandbox (set before import)."""
