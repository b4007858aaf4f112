"""The seam between the engine and agent code: what the turn and the workflows call
in ``ratchet.agents`` besides its public names, and the host's view of committed
state (``StateExport``), which the engine builds with agent code's serializers and
``ratchet.client`` exports.

Private to Ratchet (an agent author never needs these), and the one module of this
package that other packages may import privately: ``tests/test_boundaries.py``
allowlists it for ``ratchet.activities``, ``ratchet.workflows`` and ``ratchet.client``.
"""

from ._compaction import compact, estimate_tokens
from ._fit_window import Plan, kept, measured, refused
from ._interceptors import intercepted
from ._output import missing_answer
from ._state_export import AgentStateExport, StateExport
from ._thread import MESSAGES

__all__ = [
    "AgentStateExport",
    "StateExport",
    "MESSAGES",
    "Plan",
    "compact",
    "estimate_tokens",
    "intercepted",
    "kept",
    "measured",
    "missing_answer",
    "refused",
]
