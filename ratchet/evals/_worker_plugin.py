"""Evaluations on a worker: what reruns of recorded runs and sessions need there.

    worker = build_worker(client, agents, plugins=[EvalsPlugin()])

``ratchet worker`` adds it by itself. Without it a worker runs agents as before but
no rerun batch: the batch workflow, the activity that plans a source's cases, and
the tool interceptor a rerun's turns answer recorded tool calls with
(``recording.RECORDING``) all come from here.
"""

from __future__ import annotations

from collections.abc import Mapping

from temporalio.plugin import SimplePlugin

from ratchet.agents import InterceptorFactory

from ._batch_workflow import RerunBatchWorkflow
from ._plan_activity import plan_rerun
from ._recording import RECORDING, recording_interceptor


class EvalsPlugin(SimplePlugin):
    """The rerun batch workflow, its planning activity and the recording interceptor,
    for a worker that also has ``RatchetPlugin`` (``build_worker`` gives it that)."""

    tool_interceptors: Mapping[str, InterceptorFactory] = {RECORDING: recording_interceptor}

    def __init__(self) -> None:
        super().__init__("ratchet.evals", workflows=[RerunBatchWorkflow], activities=[plan_rerun])
