"""A recording of tool calls, for rerunning a recorded conversation against a changed
agent: a call that matches a recorded one (same tool, canonical-JSON-equal arguments)
gets the recorded result and runs nothing; any other call is refused (the model is
told) or runs live, as ``unrecorded`` says (see ``ratchet.evals._rerun``).

A rerun hands its recording to the run as the config of a tool interceptor
(``RECORDING``, ``RecordingInterceptor``; see ``ratchet.agents._interceptors``),
which ``EvalsPlugin`` registers on a worker."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal

from ratchet.agents import PROCEED, Intercepted
from ratchet.types import Message, SparseModel, ToolCall

if TYPE_CHECKING:
    from ratchet.agents import RunContext

UNRECORDED_REFUSED = (
    "Not run: this is a rerun of a recorded conversation, and the recording holds no "
    "call to {name} with these arguments; only recorded calls are answered."
)


class RecordedCall(SparseModel):
    """A tool call as recorded, with its result."""

    name: str
    arguments: str
    """Canonical JSON (keys sorted, no spaces): see ``canonical``."""
    result: str
    is_error: bool = False


Unrecorded = Literal["refuse", "live", "ask"]
"""What a rerun does with a call the recording does not hold: refuse it (the model
is told), run it, or ask a person (an approval: approved, it runs; rejected, not)."""


Approvals = Literal["recorded", "policy"]


class Recording(SparseModel):
    """The recorded calls a rerun answers from, and what happens to the others."""

    calls: list[RecordedCall] = []
    unrecorded: Unrecorded = "refuse"
    approvals: Approvals = "recorded"
    """``recorded``: a recorded call is answered without asking (its approval, if it
    needed one, is in the recording). ``policy``: the agent's approval rules decide
    as in a live run; approved, the call still gets its recorded result."""

    def holds(self, call: ToolCall) -> bool:
        """Whether the recording answers ``call`` with a recorded result."""
        return self.find(call) is not None

    def find(self, call: ToolCall) -> RecordedCall | None:
        try:
            arguments = canonical(call.arguments)
        except ValueError:
            arguments = call.arguments
        return next(
            (r for r in self.calls if r.name == call.name and r.arguments == arguments), None
        )


RECORDING = "ratchet.recording"
"""The name the recording interceptor is registered under (by ``EvalsPlugin``)."""


class RecordingInterceptor:
    """Answers a rerun's tool calls from its recording (a ``ToolInterceptor``): a
    recorded call gets its recorded result, without asking anyone (``approvals=
    "recorded"``) or once the agent's approval rules allow it (``"policy"``); an
    unrecorded one is refused (the model is told), runs, or waits for a person
    (``unrecorded``)."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording

    def intercept(self, call: ToolCall, context: RunContext) -> Intercepted:
        recording = self.recording
        recorded = recording.find(call)
        if recorded is not None:
            answer = Message.tool(call, recorded.result, is_error=recorded.is_error)
            return Intercepted(answer, ask=None if recording.approvals == "policy" else False)
        if recording.unrecorded == "refuse":
            refusal = UNRECORDED_REFUSED.format(name=call.name)
            return Intercepted(Message.tool(call, refusal, is_error=True), ask=False)
        return Intercepted(ask=True) if recording.unrecorded == "ask" else PROCEED


def recording_interceptor(config: Any) -> RecordingInterceptor:
    """The factory registered as ``RECORDING``: the config is a ``Recording``'s JSON."""
    return RecordingInterceptor(Recording.model_validate(config))


def canonical(arguments: str) -> str:
    """Arguments as canonical JSON, so ``{"b": 1, "a": 2}`` equals ``{"a":2,"b":1}``."""
    return json.dumps(json.loads(arguments or "{}"), sort_keys=True, separators=(",", ":"))


def recorded_calls(messages: list[Message]) -> list[RecordedCall]:
    """The tool calls in ``messages`` that have a result there, in order."""
    results = {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}
    found: list[RecordedCall] = []
    for message in messages:
        for call in message.tool_calls if message.role == "assistant" else []:
            result = results.get(call.id)
            if result is None:
                continue
            try:
                arguments = canonical(call.arguments)
            except ValueError:
                continue  # the model's bad JSON: nothing a rerun could match
            found.append(
                RecordedCall(
                    name=call.name,
                    arguments=arguments,
                    result=result.text,
                    is_error=result.is_error,
                )
            )
    return found


def user_turns(messages: list[Message]) -> list[tuple[int, int]]:
    """Where each user message of a thread is, and where what it started ends (the
    next user message, or the end): one rerun case each."""
    starts = [i for i, m in enumerate(messages) if m.role == "user"]
    ends = [*starts[1:], len(messages)] if starts else []  # no user message: no case
    return list(zip(starts, ends, strict=True))


def case_id(source: str, n: int) -> str:
    """The id of the ``n``-th user message of ``source`` (from 1) as a rerun case."""
    return f"{source}#{n}"
