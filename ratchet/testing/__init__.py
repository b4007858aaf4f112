"""Testing agents, tools and workflows built on Ratchet.

- ``RatchetTestEnvironment``: a real Temporal dev server (a subprocess on free
  ports, Ratchet's search attributes registered), an ``AgentClient`` on a fresh
  task queue, workers, and ``skip(handle, duration)`` to move a workflow's clock.
- ``OpenAIServer``: a local HTTP server speaking the OpenAI Chat Completions and
  Responses APIs from a script (errors too), for code that uses the ``openai`` client.
- ``AnthropicServer``: the same for Anthropic's Messages API (``AnthropicModel``).

A scripted model (``ScriptedModel``) is a model client: ``ratchet.agents``.
"""

import warnings
from typing import Any

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
    "WorkerProcess",
    "json_reply",
    "sse_reply",
]


def __getattr__(name: str) -> Any:
    if name != "ScriptedModel":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        "ratchet.testing.ScriptedModel moved to ratchet.agents.ScriptedModel; import it from "
        "there (the old path works until 0.3).",
        DeprecationWarning,
        stacklevel=2,
    )
    from ratchet.agents import ScriptedModel

    return ScriptedModel
