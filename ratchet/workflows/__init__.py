"""Workflows, the workflow-side helper, and the client API."""

from .agent_run import AgentRunWorkflow, RunInput
from .client import AgentClient, RunHandle
from .presets import RunOptions
from .runner import AgentRunner, RunResult, run_agent

__all__ = [
    "AgentClient",
    "AgentRunWorkflow",
    "AgentRunner",
    "RunHandle",
    "RunInput",
    "RunOptions",
    "RunResult",
    "run_agent",
]
