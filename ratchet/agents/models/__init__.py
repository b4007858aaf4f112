"""Model clients, exported by ``ratchet.agents`` (import them from there).
``AnthropicModel`` loads on first use: it needs the ``anthropic`` extra
(``pip install 'ratchet[anthropic]'``). Exported here: the context windows known."""

from typing import TYPE_CHECKING, Any

from ._base import ModelClient as ModelClient
from ._base import ModelResponse as ModelResponse
from ._context_windows import CONTEXT_WINDOWS, known_window
from ._openai_chat import OpenAIChatModel as OpenAIChatModel
from ._openai_responses import OpenAIResponsesModel as OpenAIResponsesModel
from ._scripted import ScriptedModel as ScriptedModel

if TYPE_CHECKING:
    from ._anthropic_messages import AnthropicModel as AnthropicModel

__all__ = [
    "CONTEXT_WINDOWS",
    "known_window",
]


def __getattr__(name: str) -> Any:
    if name == "AnthropicModel":
        from ._anthropic_messages import AnthropicModel

        return AnthropicModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
