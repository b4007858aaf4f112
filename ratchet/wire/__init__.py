"""The wire: what workers, workflows and clients exchange through Temporal.

Inputs, results and requests of Ratchet's workflows and activities, the options
they carry, and the names (activity types, queries) they agree on. Every layer
above imports these from here; nothing here runs Temporal code.
"""

from ._names import RUN_WORKFLOW, SESSION_WORKFLOW, TOOL_ACTIVITY, TURN_ACTIVITY
from ._options import InterceptorRef, RunOptions, SessionOptions
from ._run_data import DecisionRequest, RunInput, RunResult, StopRequest
from ._session_data import SendOutcome, SessionInput, SessionStatus
from ._turn_data import ThreadRef, ToolInput, TurnInput, TurnOutput

__all__ = [
    "DecisionRequest",
    "InterceptorRef",
    "RUN_WORKFLOW",
    "RunInput",
    "RunOptions",
    "RunResult",
    "SESSION_WORKFLOW",
    "SendOutcome",
    "SessionInput",
    "SessionOptions",
    "SessionStatus",
    "StopRequest",
    "TOOL_ACTIVITY",
    "TURN_ACTIVITY",
    "ThreadRef",
    "ToolInput",
    "TurnInput",
    "TurnOutput",
]
