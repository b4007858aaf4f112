"""What a turn returns: the messages its agent added (and the new view, if any),
as a ``TurnOutput`` checked against Temporal's payload limit."""

from __future__ import annotations

import json

from ratchet.agents import Result, RunContext
from ratchet.agents._engine import MESSAGES
from ratchet.errors import PayloadTooLargeError, UsageError
from ratchet.types import Message, Span, Usage, approximate_size, new_id, reply_id, result_id
from ratchet.wire import AttemptRecord, TurnInput, TurnOutput

from ._prompt_fit import Fitted, PromptFit


def turn_output(
    input: TurnInput,
    fitted: Fitted,
    context: RunContext,
    fit: PromptFit,
    attempts: list[AttemptRecord],
) -> TurnOutput:
    """The turn's output from what the agent appended and returned."""
    result = _checked(input, fitted.result, context)
    thread, final = fitted.thread, result.final_response
    added = _added(fitted, final, input)
    known = {m.id for m in fitted.new}
    view, note, compaction_usage = fitted.compacted or (None, None, Usage())
    if note is not None:
        added.insert(0, note)
    usage = result.usage + compaction_usage
    service = thread.kind != MESSAGES
    if service and thread.cursor != input.thread.cursor:
        view = _unsent(input, [m for m in added if m.id not in known])
    return TurnOutput(
        added=[m.id if m.id in known else m for m in added],
        final_id=final.id if final is not None else None,
        usage=usage,
        view=view,
        prompt=None if service else fit.report(result.usage, fitted.sent),
        cursor=thread.cursor if service else None,
        state=context.state.changes,
        shares=context.state.new_tokens,
        pending=[*context.pending, *result.pending],
        handoff=result.handoff,
        decisions=result.decisions,
        attempts=attempts,
    )


def _added(fitted: Fitted, final: Message | None, input: TurnInput) -> list[Message]:
    """What the agent appended to its thread (its final response too), each with an id."""
    added = fitted.thread.messages[fitted.before :]
    if final is not None and all(m is not final for m in added):
        added.append(final)
    _give_ids(added, input.execution_id, input.turn)
    return added


def _give_ids(added: list[Message], execution_id: str, turn: int) -> None:
    """Ids for the messages the turn made without one: its reply and its tool results
    get ids a watcher can tell while they stream (``reply_id``, ``result_id``)."""
    reply = next((m for m in added if m.role == "assistant" and not m.id), None)
    for message in added:
        if message.id:
            continue
        if message is reply:
            message.id = reply_id(execution_id, turn)
        elif message.role == "tool" and message.tool_call_id:
            message.id = result_id(execution_id, message.tool_call_id)
        else:
            message.id = new_id()


def _checked(input: TurnInput, result: object, context: RunContext) -> Result:
    if not isinstance(result, Result):
        raise UsageError(
            f"Agent {input.agent!r} returned {type(result).__name__} from run(); "
            "return a ratchet.agents.Result."
        )
    pending = [*context.pending, *result.pending]
    if pending and result.final_response is not None:
        raise UsageError(
            f"Agent {input.agent!r} returned a final response with {len(pending)} pending "
            "action(s) (approvals, questions, durable tools, sub-agents); their results "
            "come on the next turn, so return Result(pending=...) without final_response."
        )
    return result


def _unsent(input: TurnInput, fresh: list[Message]) -> list[Span]:
    """A service-backed thread's view after a turn that moved its cursor: the
    messages after the service's last reply (the service holds the rest)."""
    length = input.thread.length + input.new_count
    last = max((i for i, m in enumerate(fresh) if m.role == "assistant"), default=-1)
    return [Span(start=length + last + 1)]


def check_size(input: TurnInput, output: TurnOutput, limit: int | None) -> None:
    """Fail a turn whose result is over the payload ``limit`` (``None``: payloads go
    to external storage), saying what made it large and what to do."""
    if limit is None:
        return
    # Serialise only when the estimate comes near the limit.
    estimate = sum(approximate_size(m) for m in output.added if isinstance(m, Message))
    estimate += sum(len(json.dumps(c.data)) for c in output.state)
    if estimate < limit // 2:
        return
    size = len(output.model_dump_json())
    if size <= limit:
        return
    messages = [m for m in output.added if isinstance(m, Message)]
    turn = f"Turn {input.turn} of agent {input.agent!r} produced a {_mb(size)} result, over "
    if not messages or sum(map(approximate_size, messages)) < size // 2:
        keys = ", ".join(c.key for c in output.state)
        raise PayloadTooLargeError(
            f"{turn}Temporal's {_mb(limit)} payload limit, most of it state ({keys}). "
            "Keep large data out of agent state (store it elsewhere and keep a reference), "
            "or give the client external payload storage: "
            "AgentClient.connect(..., payload_storage=...)."
        )
    largest = max(messages, key=approximate_size)
    raise PayloadTooLargeError(
        f"{turn}Temporal's {_mb(limit)} payload limit; the largest message is "
        f"{_describe(largest)} at {_mb(approximate_size(largest))}. Return less from the tool "
        "(store the data elsewhere and return a reference or a summary), or give the "
        "client external payload storage: AgentClient.connect(..., payload_storage=...)."
    )


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def _describe(message: Message) -> str:
    if message.role == "tool":
        name = f"tool {message.name!r}" if message.name else "a tool"
        return f"the result of {name} (call {message.tool_call_id})"
    return f"a {message.role} message"
