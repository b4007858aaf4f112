"""Model clients, exported by ``ratchet.agents`` (import them from there). The
provider clients load on first use, so importing Ratchet does not import their SDKs
(``openai`` alone takes about a second); ``AnthropicModel`` needs the ``anthropic``
extra (``pip install 'ratchet[anthropic]'``). Exported here: the context windows known."""

import importlib
from typing import TYPE_CHECKING, Any

from ._base import ModelClient as ModelClient
from ._base import ModelResponse as ModelResponse
from ._context_windows import CONTEXT_WINDOWS, known_window
from ._scripted import ScriptedModel as ScriptedModel

if TYPE_CHECKING:
    from ._anthropic_messages import AnthropicModel as AnthropicModel
    from ._openai_chat import OpenAIChatModel as OpenAIChatModel
    from ._openai_responses import OpenAIResponsesModel as OpenAIResponsesModel

__all__ = [
    "CONTEXT_WINDOWS",
    "known_window",
]

_LAZY = {
    "AnthropicModel": "._anthropic_messages",
    "OpenAIChatModel": "._openai_chat",
    "OpenAIResponsesModel": "._openai_responses",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
