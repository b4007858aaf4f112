"""Workflows, the workflow-side helper, and the client API."""

from .agent_run import AgentRunWorkflow, RunInput
from .client import AgentClient, RunHandle
from .fork import Checkpoint
from .pending import DecisionRequest, StopRequest
from .presets import RunOptions
from .runner import AgentRunner, RunResult, run_agent
from .session import AgentSessionWorkflow, SessionOptions, SessionStatus
from .session_client import SessionHandle
from .turns import TurnRecord

__all__ = [
    "AgentClient",
    "Checkpoint",
    "DecisionRequest",
    "StopRequest",
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
    "TurnRecord",
    "run_agent",
]
