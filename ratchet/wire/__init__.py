"""The wire: what workers, workflows and clients exchange through Temporal.

Inputs, results and requests of Ratchet's workflows and activities, the options
they carry, and the names (workflow and activity types, queries) they agree on.
Every layer above imports these from here; nothing here runs Temporal code.

Exported: what a user of Ratchet passes or gets back (options, results, a session's
status and a send's outcome), and the workflow types and run input for starting a
run from Temporal directly. The turn's and tool's inputs and outputs, and the
workflows' requests, are internal (``ratchet.wire._turn_data`` and its siblings,
described in docs/how-it-works.md).
"""

from ._names import RUN_WORKFLOW, SESSION_WORKFLOW
from ._options import InterceptorRef, RunOptions, SessionOptions
from ._run_data import RunInput, RunResult
from ._session_data import SendOutcome, SessionStatus

__all__ = [
    "InterceptorRef",
    "RUN_WORKFLOW",
    "RunInput",
    "RunOptions",
    "RunResult",
    "SESSION_WORKFLOW",
    "SendOutcome",
    "SessionOptions",
    "SessionStatus",
]
