"""Ratchet's workflows and the workflow-side agent loop.

``AgentRun`` runs one agent run (``AgentRunWorkflow`` the runs started by 0.1),
``AgentSessionWorkflow`` a long-lived session, ``ScheduledSendWorkflow`` a
schedule's message to a session; ``run_agent`` / ``AgentRunner`` run agents from a
workflow of your own.
Nothing here talks to a Temporal client: that is ``ratchet.client``.
"""

from ._agent_run import AgentRun, AgentRunWorkflow
from ._decisions import AgentHandlers
from ._progress import run_details
from ._runner import AgentRunner, RunHooks, run_agent
from ._sandbox import SANDBOXED
from ._scheduled_send import ScheduledSendWorkflow
from ._session import AgentSessionWorkflow

__all__ = [
    "AgentHandlers",
    "AgentRun",
    "AgentRunner",
    "AgentRunWorkflow",
    "AgentSessionWorkflow",
    "run_agent",
    "run_details",
    "RunHooks",
    "SANDBOXED",
    "ScheduledSendWorkflow",
]
