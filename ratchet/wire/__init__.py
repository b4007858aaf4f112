"""The wire: what workers, workflows and clients exchange through Temporal.

Inputs, results and requests of Ratchet's workflows and activities, the options
they carry, and the names (workflow and activity types, queries) they agree on.
Every layer above imports these from here; nothing here runs Temporal code.

Exported: what a user of Ratchet passes or gets back (options, results, a session's
status and a send's outcome), the workflow types and run input for starting a
run from Temporal directly, and the search attributes runs and sessions are indexed
by (``AGENT_STATUS``, ...: ``SearchAttributeKey``s, for visibility queries and
``typed_search_attributes``). The turn's and tool's inputs and outputs, and the
workflows' requests, are internal (``ratchet.wire._turn_data`` and its siblings,
described in docs/how-it-works.md).
"""

from ._names import RUN_WORKFLOW, SESSION_WORKFLOW
from ._options import InterceptorRef, RunOptions, SessionOptions
from ._run_data import RunInput, RunResult
from ._search_attributes import (
    AGENT_COST_USD,
    AGENT_NAME,
    AGENT_SESSION_ID,
    AGENT_STATUS,
    AGENT_TOKENS,
    AGENT_TURNS,
    SEARCH_ATTRIBUTES,
)
from ._session_data import SendOutcome, SessionStatus

__all__ = [
    "AGENT_COST_USD",
    "AGENT_NAME",
    "AGENT_SESSION_ID",
    "AGENT_STATUS",
    "AGENT_TOKENS",
    "AGENT_TURNS",
    "InterceptorRef",
    "RUN_WORKFLOW",
    "RunInput",
    "RunOptions",
    "RunResult",
    "SEARCH_ATTRIBUTES",
    "SESSION_WORKFLOW",
    "SendOutcome",
    "SessionOptions",
    "SessionStatus",
]
