"""ToolCallingAgent: one model call per turn, then the tools it asked for."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from pydantic import ValidationError

from ratchet.errors import ApprovalRuleError, ConfigurationError
from ratchet.types import Decision, Message, PendingAction, ToolCall

from ._agent import Agent, Result
from ._approvals import ApprovalPolicy
from ._context import RunContext
from ._interceptors import intercepted
from ._output import FINAL_RESULT, OutputSpec
from ._thread import Thread
from ._tools import Tool, Toolset, client_tool, tool
from .models._base import ModelClient, ModelResponse, empty_reply

HANDOFF_PREFIX = "transfer_to_"


class ToolCallingAgent(Agent):
    """Calls the model; if it asked for tools, runs them (in parallel) and returns.

    The run ends on the first reply without tool calls. Unknown tools and bad
    arguments become error messages the model reads on its next turn.

    Calls that need a person (``requires_approval``, ``approval_policy``, ``ask_user``),
    ``durable`` tools, sub-agents (``agent_tool``) and the run's client tools
    (``ratchet.agents._client_tools``) are not run in the turn: they go back to the
    engine as pending work, and their results arrive on the next turn.
    ``handoffs`` names agents this one may hand the run to (a ``transfer_to_<name>``
    tool each). ``toolsets`` add tools listed at run time, such as an MCP server's
    (``ratchet.agents.mcp_tools``). ``output_type`` (a pydantic model, a dataclass, a
    union, ...) asks for a typed final answer, validated in the turn
    (``ratchet.agents._output``).
    """

    def __init__(
        self,
        model: ModelClient,
        tools: Sequence[Tool] = (),
        *,
        instructions: str | None = None,
        approval_policy: ApprovalPolicy | Callable[[str, dict[str, Any]], bool] | None = None,
        handoffs: Sequence[str] = (),
        output_type: Any = None,
        toolsets: Sequence[Toolset] = (),
    ) -> None:
        self.model = model
        self.toolsets = list(toolsets)
        self.tools = {t.name: t for t in [*tools, *map(_handoff_tool, handoffs)]}
        self.output: OutputSpec[Any] | None = None
        if output_type is not None:
            if FINAL_RESULT in self.tools:
                raise ValueError(
                    f"A tool is named {FINAL_RESULT!r}, the name of the tool a typed answer "
                    "is given with; rename it."
                )
            self.output = OutputSpec(output_type)
            self.tools[FINAL_RESULT] = self.output.tool
        self.instructions = instructions
        if approval_policy is not None and not callable(approval_policy):
            raise ApprovalRuleError(
                f"approval_policy takes an ApprovalPolicy or a function (tool name, arguments) "
                f"-> bool; got {approval_policy!r}."
            )
        self.approval_policy = approval_policy
        """Called with each call's tool name and arguments: ``True`` asks for approval.
        An ``ApprovalPolicy`` can also deny a call: the model is told, it never runs."""
        self.thread_kinds = model.thread_kinds

    async def run(self, messages: list[Message], thread: Thread, context: RunContext) -> Result:
        await thread.on_new_messages(messages)
        prompt = list(thread.messages)
        if self.instructions:
            prompt.insert(0, Message.system(self.instructions))
        # Not waited for: if the reply is final, the turn's result records it; if it
        # asks for tools, the check before the first tool writes it.
        tools = {t.name: t for t in map(client_tool, context.client_tools)}
        tools.update(await self.turn_tools())  # the agent's own tool wins a name
        response = await context.once(
            "model", lambda: self._ask(prompt, tools, context), ModelResponse, wait=False
        )
        reply = response.message
        if response.cursor is not None:
            thread.cursor = response.cursor
        await thread.on_new_messages([reply])
        if self.output is not None:
            typed = await self._typed_answer(reply, thread)
            if typed is not None:
                return typed.model_copy(update={"usage": response.usage})
        elif not reply.tool_calls:
            return Result(final_response=reply, usage=response.usage)
        pending: list[PendingAction] = []
        now: list[ToolCall] = []
        answered: list[Message] = []  # denied, or answered by the run's tool interceptor
        audit: list[Decision] = []
        for call in reply.tool_calls:
            route = self._route(call, tools.get(call.name), context, audit)
            if isinstance(route, Message):
                answered.append(route)
            elif route is None:
                now.append(call)
            else:
                pending.append(route)
        # A turn's only tool call is its last step: the turn's result records it.
        last = len(now) == 1
        if len(now) <= 1:  # the common case: no task and future per call
            results = [await self._call(c, tools, context, last) for c in now]
        else:
            results = await asyncio.gather(*(self._call(c, tools, context, last) for c in now))
        await thread.on_new_messages([*answered, *results])
        return Result(
            usage=response.usage,
            pending=pending,
            handoff=_handoff(reply, tools),
            decisions=audit,
        )

    def _route(
        self, call: ToolCall, tool: Tool | None, context: RunContext, audit: list[Decision]
    ) -> Message | PendingAction | None:
        """What becomes of one call: an answer now (the approval policy denies it, or
        the run's tool interceptor answers it), work for the engine (an approval, a
        question, a durable tool, a sub-agent), or ``None``: it runs in this turn.
        The policy's allow or deny goes into ``audit``."""
        arguments = tool.checked_arguments(call) if tool is not None else _parsed(call)
        if arguments is None:
            return None  # it fails in the turn, with a message the model reads
        decision, policy = self._policy(call, arguments)
        if decision is not None and not decision.approved:
            audit.append(decision)
            return Message.tool(call, f"Not run: {decision.reason}.", is_error=True)
        final = self.output is not None and call.name == FINAL_RESULT  # never approved
        action = tool.pending_for(call, arguments, policy) if tool and not final else None
        if decision is not None and action is None:
            audit.append(decision)  # allowed, and nobody else asks about it
        return _intercept(call, tool, arguments, action, context)

    def _policy(
        self, call: ToolCall, arguments: dict[str, Any]
    ) -> tuple[Decision | None, Callable[[str, dict[str, Any]], bool] | None]:
        """The approval policy's decision on ``call`` if its rules allow or deny it, and
        the policy left for the tool to ask (the plain function, or "ask" if the
        rules said so)."""
        policy = self.approval_policy
        if not isinstance(policy, ApprovalPolicy):
            return None, policy
        verdict, rule = policy.decide(call.name, arguments)
        if verdict == "ask":
            return None, _always
        if rule is None:
            why = f"the approval policy's default allows {call.name}"
        else:
            said = "allows" if verdict == "allow" else "does not allow"
            why = f"the approval policy {said} {call.name} (rule: {rule.describe()})"
            why += f": {rule.reason}" if rule.reason else ""
        return Decision(id=call.id, approved=verdict == "allow", reason=why, by="policy"), None

    async def _typed_answer(self, reply: Message, thread: Thread) -> Result | None:
        """The turn's result if ``reply`` gave (or failed to give) the typed answer;
        ``None`` if it asked for tools and gave none: run them as usual."""
        assert self.output is not None
        if not reply.tool_calls:
            try:
                self.output.from_text(reply.text)
            except ValidationError as e:
                await thread.on_new_messages([self.output.retry(e)])
                return Result()  # the model tries again next turn
            return Result(final_response=reply)
        final = next((c for c in reply.tool_calls if c.name == FINAL_RESULT), None)
        if final is None:
            return None
        try:
            value = self.output.from_call(final)
        except ValueError:  # ValidationError too: the tool's error message says what
            return None
        answered = [
            Message.tool(c, "Final answer accepted.")
            if c is final
            else Message.tool(c, "Not run: the run ended with the final answer.")
            for c in reply.tool_calls
        ]
        answer = self.output.message(value)
        await thread.on_new_messages([*answered, answer])
        return Result(final_response=answer)

    async def turn_tools(self) -> dict[str, Tool]:
        """This turn's tools: the agent's own, then each toolset's current list."""
        if not self.toolsets:
            return self.tools
        tools = dict(self.tools)
        for toolset in self.toolsets:
            for found in await toolset.tools():
                if found.name in tools:
                    raise ConfigurationError(
                        f"Two tools are named {found.name!r}: one of the agent's and one of "
                        f"toolset {toolset.name!r}. Give the toolset a prefix (prefix=...) "
                        "or leave the tool out (allowed=...)."
                    )
                tools[found.name] = found
        return tools

    async def find_tool(self, name: str) -> Tool | None:
        return self.tools.get(name) or (await self.turn_tools()).get(name)

    async def aclose(self) -> None:
        """Close the toolsets' connections (the worker does, when it stops)."""
        for toolset in self.toolsets:
            await toolset.aclose()

    async def _ask(
        self, prompt: list[Message], tools: dict[str, Tool], context: RunContext
    ) -> ModelResponse:
        response = await self.model.create(prompt, list(tools.values()), context)
        if not response.message.content and not response.message.tool_calls:
            # Raised inside the step, so the checkpoint never records an empty reply.
            raise empty_reply(response.model)
        return response

    async def _call(
        self, call: ToolCall, tools: dict[str, Tool], context: RunContext, last: bool = False
    ) -> Message:
        tool = tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(tools)) or "(none)"
            return Message.tool(
                call,
                f"Error: there is no tool named {call.name!r}. Available tools: {known}.",
                is_error=True,
            )
        return await context.once(
            f"tool:{call.id}", lambda: tool.invoke(call, context), Message, wait=not last
        )


def _intercept(
    call: ToolCall,
    tool: Tool | None,
    arguments: dict[str, Any],
    action: PendingAction | None,
    context: RunContext,
) -> Message | PendingAction | None:
    """``action`` (what the call's route is so far) after the run's tool interceptor
    has seen the call: it may answer it, or have a person decide first."""
    seen = intercepted(call, tool, context)
    asks = action is not None and action.kind == "approval"
    if seen.answer is not None and not (asks if seen.ask is None else seen.ask):
        return seen.answer  # nothing runs, nobody is asked
    runs_now = action is None or action.kind == "tool"  # durable tools too
    if seen.ask and tool is not None and runs_now:
        return tool.pending_for(call, arguments, _always)  # a person decides
    return action


def _always(name: str, arguments: dict[str, Any]) -> bool:
    return True


def _parsed(call: ToolCall) -> dict[str, Any] | None:
    """An unknown tool's arguments, for the rules that match it by name."""
    try:
        return call.parsed_arguments()
    except ValueError:
        return None


def _handoff(reply: Message, tools: dict[str, Tool]) -> str | None:
    """The agent the first handoff call of ``reply`` names, if any."""
    for call in reply.tool_calls:
        tool = tools.get(call.name)
        if tool is not None and tool.role == "handoff":
            return tool.agent
    return None


def _handoff_tool(agent: str) -> Tool:
    def transfer() -> str:
        return f"Transferred to {agent}; it takes over from the next turn."

    described = tool(
        name=f"{HANDOFF_PREFIX}{agent}",
        description=f"Hand this conversation over to the {agent} agent.",
    )(transfer)
    return replace(described, role="handoff", agent=agent)
