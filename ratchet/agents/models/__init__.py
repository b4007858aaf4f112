"""Model clients. The provider clients load on first use, so importing Ratchet does
not import their SDKs (``openai`` alone takes about a second); ``AnthropicModel``
needs the ``anthropic`` extra (``pip install 'ratchet[anthropic]'``)."""

import importlib
from typing import TYPE_CHECKING, Any

from ._base import ModelClient, ModelResponse
from ._context_windows import CONTEXT_WINDOWS, known_window
from ._scripted import ScriptedModel

if TYPE_CHECKING:
    from ._anthropic_messages import AnthropicModel
    from ._openai_chat import OpenAIChatModel
    from ._openai_responses import OpenAIResponsesModel

__all__ = [
    "AnthropicModel",
    "CONTEXT_WINDOWS",
    "ModelClient",
    "ModelResponse",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "ScriptedModel",
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
