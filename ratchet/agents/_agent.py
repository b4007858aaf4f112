"""The agent interface: a stateless object that takes one turn at a time."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, cast

from pydantic import BaseModel

from ratchet.types import Decision, Message, PendingAction, Usage

from ._context import RunContext
from ._serializers import StateSerializer
from ._thread import MESSAGES, Thread
from ._tools import Tool


class Result(BaseModel):
    """What one turn produced besides the messages it appended to the thread.

    ``final_response`` set means the run is finished; ``None`` means "call me again"
    (for example after running the tools the model asked for).
    """

    final_response: Message | None = None
    usage: Usage = Usage()
    pending: list[PendingAction] = []
    """Work for the engine before the next turn: approvals, questions, durable tool
    calls, sub-agents (see ``ratchet.agents._pending``). A turn with pending work
    cannot be final."""
    handoff: str | None = None
    """Hand the run (and its thread) to this registered agent from the next turn on."""
    decisions: list[Decision] = []
    """Calls the agent's own approval policy allowed or denied in this turn, for the
    audit trail (``decisions()``; ``by="policy"``, the rule in ``reason``)."""


class Agent(ABC):
    """An agent keeps no conversation of its own: the thread comes in on every call.

    ``messages`` are new messages not yet in ``thread`` (the user's prompt on the
    first turn, usually nothing after). The agent appends what it reads and
    produces to ``thread``; the engine records exactly those messages.
    """

    thread_kinds: frozenset[str] = frozenset({MESSAGES})
    """The thread kinds this agent can run on (see ``ratchet.agents._thread``)."""
    state_serializer: StateSerializer | None = None
    """How ``context.state`` values are stored; ``None``: ``JSONSerializer``."""

    @abstractmethod
    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result: ...

    @property
    def prompt_window(self) -> int | None:
        """The most tokens this agent's prompts may hold (``None``: not known); turns
        keep prompts within it (``RunOptions.fit_window``). Default: the window of
        the agent's ``model`` attribute, if it has one."""
        model = getattr(self, "model", None)
        return getattr(model, "prompt_window", None)

    async def find_tool(self, name: str) -> Tool | None:
        """The tool a pending call names, for the engine to run it as an activity."""
        tools = getattr(self, "tools", None)
        if not isinstance(tools, dict):
            return None
        found = cast(dict[str, Any], tools).get(name)
        return found if isinstance(found, Tool) else None
