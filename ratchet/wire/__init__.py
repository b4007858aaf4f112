"""The wire: what workers, workflows and clients exchange through Temporal.

Inputs, results and requests of Ratchet's workflows and activities, the options
they carry, and the names (activity types, queries) they agree on. Every layer
above imports these from here; nothing here runs Temporal code.
"""

from .names import RUN_WORKFLOW, SESSION_WORKFLOW, TOOL_ACTIVITY, TURN_ACTIVITY
from .options import RunOptions, SessionOptions
from .run_data import DecisionRequest, RunInput, RunResult, StopRequest
from .session_data import SendOutcome, SessionInput, SessionStatus
from .turn_data import ThreadRef, ToolInput, TurnInput, TurnOutput

__all__ = [
    "RUN_WORKFLOW",
    "SESSION_WORKFLOW",
    "TOOL_ACTIVITY",
    "TURN_ACTIVITY",
    "DecisionRequest",
    "RunInput",
    "RunOptions",
    "RunResult",
    "SendOutcome",
    "SessionInput",
    "SessionOptions",
    "SessionStatus",
    "StopRequest",
    "ThreadRef",
    "ToolInput",
    "TurnInput",
    "TurnOutput",
]
