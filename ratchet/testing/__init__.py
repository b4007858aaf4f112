"""Testing agents, tools and workflows built on Ratchet.

- ``RatchetTestEnvironment``: a real Temporal dev server (a subprocess on free
  ports, Ratchet's search attributes registered), an ``AgentClient`` on a fresh
  task queue, workers, and ``skip(handle, duration)`` to move a workflow's clock.
- ``ScriptedModel``: a model that answers from a script, keyed by position.
- ``OpenAIServer``: a local HTTP server speaking the OpenAI Chat Completions and
  Responses APIs from a script (errors too), for code that uses the ``openai`` client.
- ``AnthropicServer``: the same for Anthropic's Messages API (``AnthropicModel``).
"""

from ratchet.agents.models.scripted import ScriptedModel

from .anthropic_server import AnthropicServer
from .environment import RatchetTestEnvironment
from .openai_server import OpenAIServer
from .worker_process import ChildProcess, WorkerProcess

__all__ = [
    "AnthropicServer",
    "ChildProcess",
    "OpenAIServer",
    "RatchetTestEnvironment",
    "ScriptedModel",
    "WorkerProcess",
]
