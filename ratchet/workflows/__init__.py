"""Workflows, the workflow-side helper, and the client API."""

from .agent_run import AgentRunWorkflow, RunInput
from .client import AgentClient, RunHandle, SessionHandle
from .presets import RunOptions
from .runner import AgentRunner, RunResult, run_agent
from .session import AgentSessionWorkflow, SessionOptions, SessionStatus

__all__ = [
    "AgentClient",
    "AgentRunWorkflow",
    "AgentRunner",
    "AgentSessionWorkflow",
    "RunHandle",
    "RunInput",
    "RunOptions",
    "RunResult",
    "SessionHandle",
    "SessionOptions",
    "SessionStatus",
    "run_agent",
]
