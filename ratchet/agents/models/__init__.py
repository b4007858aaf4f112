"""Model clients. ``AnthropicModel`` loads on first use: it needs the ``anthropic``
extra (``pip install 'ratchet[anthropic]'``)."""

from typing import TYPE_CHECKING, Any

from ._base import ModelClient, ModelResponse
from ._context_windows import CONTEXT_WINDOWS, known_window
from ._openai_chat import OpenAIChatModel
from ._openai_responses import OpenAIResponsesModel
from ._scripted import ScriptedModel

if TYPE_CHECKING:
    from ._anthropic_messages import AnthropicModel

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


def __getattr__(name: str) -> Any:
    if name == "AnthropicModel":
        from ._anthropic_messages import AnthropicModel

        return AnthropicModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
