"""Model clients."""

from .base import ModelClient, ModelResponse
from .openai_chat import OpenAIChatModel
from .openai_responses import OpenAIResponsesModel
from .scripted import ScriptedModel

__all__ = [
    "ModelClient",
    "ModelResponse",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "ScriptedModel",
]
