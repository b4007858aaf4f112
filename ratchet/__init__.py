"""Ratchet: durable agents for Python on Temporal.

Everything a first agent needs is importable from here::

    from ratchet import AgentClient, ToolCallingAgent, OpenAIChatModel, build_worker, tool

The packages behind these names, for the rest:

- ``ratchet.agents``: write agents (plain async Python, no Temporal imports).
- ``ratchet.client``: start, watch and steer runs and sessions, read their state.
- ``ratchet.worker`` / ``ratchet.plugin``: host agents (``build_worker``, or the
  temporalio plugins for an existing app).
- ``ratchet.workflows``: the workflows, and ``run_agent`` for workflows of your own.
- ``ratchet.errors``: every error Ratchet raises.
- ``ratchet.wire``: what workers, workflows and clients exchange (options included).

Names load on first use, so ``import ratchet`` stays cheap (the CLI's ``--help``
imports nothing from Temporal).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ratchet.agents import (
        Agent,
        OpenAIChatModel,
        Result,
        RunContext,
        ScriptedModel,
        Thread,
        ToolCallingAgent,
        ask_user,
        tool,
    )
    from ratchet.client import AgentClient, RunHandle, SessionHandle
    from ratchet.plugin import RatchetClientPlugin, RatchetPlugin
    from ratchet.process import run_main
    from ratchet.types import Message
    from ratchet.wire import RunOptions, RunResult, SessionOptions
    from ratchet.worker import build_worker

__version__ = "0.2.0.dev0"
"""The next release, 0.2, in development (CHANGELOG: Unreleased); 0.1.0 is the last released."""

_WHERE = {
    "Agent": "ratchet.agents",
    "Result": "ratchet.agents",
    "RunContext": "ratchet.agents",
    "Message": "ratchet.types",
    "Thread": "ratchet.agents",
    "ToolCallingAgent": "ratchet.agents",
    "tool": "ratchet.agents",
    "ask_user": "ratchet.agents",
    "OpenAIChatModel": "ratchet.agents",
    "ScriptedModel": "ratchet.agents",
    "AgentClient": "ratchet.client",
    "RunHandle": "ratchet.client",
    "SessionHandle": "ratchet.client",
    "RunOptions": "ratchet.wire",
    "SessionOptions": "ratchet.wire",
    "RunResult": "ratchet.wire",
    "build_worker": "ratchet.worker",
    "RatchetPlugin": "ratchet.plugin",
    "RatchetClientPlugin": "ratchet.plugin",
    "run_main": "ratchet.process",
}

__all__ = [
    "Agent",
    "AgentClient",
    "Message",
    "OpenAIChatModel",
    "RatchetClientPlugin",
    "RatchetPlugin",
    "Result",
    "RunContext",
    "RunHandle",
    "RunOptions",
    "RunResult",
    "ScriptedModel",
    "SessionHandle",
    "SessionOptions",
    "Thread",
    "ToolCallingAgent",
    "ask_user",
    "build_worker",
    "run_main",
    "tool",
]
"""The public names (20); ``_WHERE`` says which package each comes from."""


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'ratchet' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
