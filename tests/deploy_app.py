"""An app deployed twice in the versioning test (tests/durability/test_versioned_deploy.py):
each worker process says which build it is (``RATCHET_BUILD_ID``), and
``REMINDER_CHANGED=1`` is a build whose user workflow changed without
``workflow.patched`` (the replay gate must refuse it)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import timedelta

from temporalio import workflow
from temporalio.common import VersioningBehavior

from ratchet.agents import RunContext, ScriptedModel, ToolCallingAgent, tool
from ratchet.types import Message

BUILD = os.environ.get("RATCHET_BUILD_ID", "unversioned")
CHANGED = os.environ.get("REMINDER_CHANGED") == "1"


def where() -> ToolCallingAgent:
    return ToolCallingAgent(ScriptedModel(lambda messages, context: f"answered by {BUILD}"))


def careful() -> ToolCallingAgent:
    """Asks to run ``ship`` (which needs an approval), then says where it finished."""

    @tool(requires_approval=True)
    async def ship() -> str:
        """Ship the fix."""
        return f"shipped by {BUILD}"

    def script(messages: Sequence[Message], context: RunContext) -> Message | str:
        if messages[-1].role == "user":
            return ScriptedModel.calls(("ship", {}))
        return f"{messages[-1].text}, answered by {BUILD}"

    return ToolCallingAgent(ScriptedModel(script), [ship])


AGENTS = {"where": where, "careful": careful}


@workflow.defn(name="Reminder", sandboxed=False)
class Reminder:
    """A workflow of the app's own, waiting for a signal (at most an hour)."""

    def __init__(self) -> None:
        self._done = False

    @workflow.run
    async def run(self, text: str) -> str:
        if CHANGED:  # the timer dropped, not behind workflow.patched: open runs can't replay
            await workflow.wait_condition(lambda: self._done)
        else:
            await workflow.wait_condition(lambda: self._done, timeout=timedelta(hours=1))
        return f"{text} (on {BUILD})"

    @workflow.signal
    def done(self) -> None:
        self._done = True


@workflow.defn(name="Nightly", sandboxed=False, versioning_behavior=VersioningBehavior.AUTO_UPGRADE)
class Nightly(Reminder):
    """``Reminder`` on auto-upgrade: it moves to each new build, so the replay gate
    must check it (pinned runs never replay on another build)."""

    @workflow.run
    async def run(self, text: str) -> str:
        return await super().run(text)

    @workflow.signal
    def done(self) -> None:
        self._done = True


WORKFLOWS = [Reminder, Nightly]
