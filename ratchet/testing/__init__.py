"""Testing agents, tools and workflows built on Ratchet.

- ``RatchetTestEnvironment``: a real Temporal dev server (a subprocess on free
  ports, Ratchet's search attributes registered), an ``AgentClient`` on a fresh
  task queue, workers, and ``skip(handle, duration)`` to move a workflow's clock.
- ``ScriptedModel``: a model that answers from a script, keyed by position.
- ``OpenAIServer``: a local HTTP server speaking the OpenAI Chat Completions and
  Responses APIs from a script (errors too), for code that uses the ``openai`` client.
- ``AnthropicServer``: the same for Anthropic's Messages API (``AnthropicModel``).
"""

from ratchet.agents.models import ScriptedModel

from ._anthropic_server import AnthropicServer
from ._environment import RatchetTestEnvironment
from ._openai_server import OpenAIServer, Reply, Request, json_reply, sse_reply
from ._worker_process import ChildProcess, WorkerProcess

__all__ = [
    "AnthropicServer",
    "ChildProcess",
    "OpenAIServer",
    "RatchetTestEnvironment",
    "Reply",
    "Request",
    "ScriptedModel",
    "WorkerProcess",
    "json_reply",
    "sse_reply",
]
