"""Tools: plain Python functions the model can call, described by their type hints."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol, get_args, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from ratchet.errors import ApprovalRuleError, ToolError
from ratchet.types import ClientTool, Message, PendingAction, ToolCall, question_of

from ._approvals import ApprovalPolicy, predicate
from ._context import RunContext
from ._tracing import Span, mark_failed, tool_span

logger = logging.getLogger(__name__)

ApprovalRule = bool | Callable[[dict[str, Any]], bool]
"""``True``: every call needs approval; a function: the calls (by arguments) that do."""


@dataclass(frozen=True)
class Tool:
    """A callable the model may ask for, with the JSON schema of its arguments."""

    name: str
    description: str
    fn: Callable[..., Any]
    arguments_model: type[BaseModel] | None
    """Validates the arguments before ``fn`` runs; ``None``: ``schema`` describes them
    and ``fn`` checks them itself (an MCP server's tools)."""
    context_param: str | None = None
    requires_approval: ApprovalRule = False
    """A person approves each call (or, with a function, the calls it picks) before it
    runs; the call then runs as its own activity."""
    durable: bool = False
    """Run every call as its own activity, outside the turn: once it has completed it
    never runs again, even if the worker dies right after."""
    timeout: float | None = None
    """Seconds one attempt of the tool's own activity may take (default: the turn's)."""
    max_attempts: int | None = None
    """Attempts of the tool's own activity before its error goes to the model
    (default: the run's ``max_attempts``)."""
    role: Literal["function", "ask_user", "agent", "handoff", "client"] = "function"
    """``ask_user``: the call is a question for the user; ``agent``: the call runs the
    registered agent named ``agent`` as a sub-agent; ``handoff``: the call hands the
    run to ``agent`` from the next turn on; ``client``: the run's caller runs it
    (``client_tool``)."""
    agent: str | None = None
    schema: dict[str, Any] | None = None
    """The arguments' JSON schema when there is no ``arguments_model``."""

    def checked_arguments(self, call: ToolCall) -> dict[str, Any] | None:
        """The call's arguments, validated and with their defaults filled in (as JSON
        values), or ``None`` if they do not parse or validate: such a call runs in the
        turn and fails with a message the model reads, so no rule or person is asked
        about garbage. Without an ``arguments_model`` they are only parsed."""
        try:
            raw = call.parsed_arguments()
            if self.arguments_model is None:
                return raw
            return self.arguments_model.model_validate(raw).model_dump(mode="json")
        except ValueError:  # a ValidationError too
            return None

    def pending_for(
        self,
        call: ToolCall,
        arguments: dict[str, Any],
        policy: Callable[[str, dict[str, Any]], bool] | None = None,
    ) -> PendingAction | None:
        """The engine's part in ``call`` (whose ``arguments`` are checked), or ``None``
        if the turn should run it now. A ``requires_approval`` function or a plain
        ``policy`` that raises fails with ``ApprovalRuleError``."""
        if self.role == "ask_user":
            return PendingAction(id=call.id, kind="input", call=call, question=question_of(call))
        if self.role == "agent":
            return PendingAction(id=call.id, kind="agent", call=call, agent=self.agent)
        if self.role == "client":
            return PendingAction(id=call.id, kind="client", call=call)
        rule = self.requires_approval
        needs = (
            predicate(
                rule, arguments, f"The requires_approval function of tool {self.name}", self.name
            )
            if callable(rule)
            else rule
        )
        if not needs and policy is not None:
            needs = _policy_asks(policy, self.name, arguments)
        if needs:
            kind = "approval"
        elif self.durable:
            kind = "tool"
        else:
            return None
        return PendingAction(
            id=call.id,
            kind=kind,
            call=call,
            timeout_seconds=self.timeout,
            max_attempts=self.max_attempts,
        )

    @property
    def parameters(self) -> dict[str, Any]:
        if self.arguments_model is None:
            return dict(self.schema or {"type": "object", "properties": {}})
        schema = self.arguments_model.model_json_schema()
        schema.pop("title", None)
        return schema

    def spec(self) -> dict[str, Any]:
        """The tool in the OpenAI function-calling format."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    async def invoke(
        self, call: ToolCall, context: RunContext, *, raise_errors: bool = False
    ) -> Message:
        """Run the call. Bad arguments and tool exceptions become an error message
        the model reads on its next turn, never an exception out of the turn.
        With ``raise_errors`` a tool's exception propagates (its activity retries)."""
        with tool_span(self.name, call.id, context) as span:
            return await self._invoke(call, context, span, raise_errors)

    async def _invoke(
        self, call: ToolCall, context: RunContext, span: Span, raise_errors: bool
    ) -> Message:
        try:
            raw = call.parsed_arguments()
        except ValueError as e:
            mark_failed(span, type(e).__qualname__)
            return Message.tool(
                call,
                f"Error: the arguments for {self.name} are not valid JSON ({e}). "
                f"Send a JSON object matching this schema: {json.dumps(self.parameters)}",
                is_error=True,
            )
        if self.arguments_model is None:
            kwargs = dict(raw)
        else:
            try:
                kwargs = self._validated(raw)
            except ValidationError as e:
                mark_failed(span, type(e).__qualname__)
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in err['loc']) or '(arguments)'}: {err['msg']}"
                    for err in e.errors()
                )
                return Message.tool(
                    call,
                    f"Error: invalid arguments for {self.name}: {problems}. "
                    f"Expected schema: {json.dumps(self.parameters)}",
                    is_error=True,
                )
        if self.context_param:
            kwargs[self.context_param] = context.for_call(call.id)
        try:
            if inspect.iscoroutinefunction(self.fn):
                value = await self.fn(**kwargs)
            else:
                # A sync tool must not block the worker's event loop.
                value = await asyncio.to_thread(self.fn, **kwargs)
        except ToolError as e:  # the tool's own account of what failed: never retried
            mark_failed(span, type(e).__qualname__)
            logger.info("%s: %s (the model reads it)", _where(self.name, call, context), e)
            return Message.tool(call, f"Error: {e}", is_error=True)
        except Exception as e:  # noqa: BLE001 - the model decides what to do with a failed tool
            if raise_errors:
                raise
            mark_failed(span, type(e).__qualname__)
            # The model reads it, but a raising tool is often a bug: its developer sees it.
            logger.warning(
                "%s raised %s: %s (the model reads it as the call's result)",
                _where(self.name, call, context),
                type(e).__name__,
                e,
                exc_info=e,
            )
            return Message.tool(
                call, f"Error: {self.name} failed: {type(e).__name__}: {e}", is_error=True
            )
        return Message.tool(call, _to_text(value))

    def _validated(self, raw: dict[str, Any]) -> dict[str, Any]:
        assert self.arguments_model is not None
        args = self.arguments_model.model_validate(raw)
        return {name: getattr(args, name) for name in type(args).model_fields}


def _where(name: str, call: ToolCall, context: RunContext) -> str:
    return (
        f"Tool {name!r} (call {call.id}, turn {context.turn} of agent {context.agent!r} "
        f"in run {context.run_id})"
    )


def _policy_asks(
    policy: Callable[[str, dict[str, Any]], bool], name: str, arguments: dict[str, Any]
) -> bool:
    if isinstance(policy, ApprovalPolicy):  # its rules name themselves when they raise
        return policy(name, arguments)
    return predicate(
        lambda args: policy(name, args), arguments, "The agent's approval_policy", name
    )


def _to_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(value, default=str)


def _build(
    fn: Callable[..., Any], name: str | None, description: str | None, **options: Any
) -> Tool:
    hints = get_type_hints(fn)
    fields: dict[str, Any] = {}
    context_param = None
    for param in inspect.signature(fn).parameters.values():
        annotation = hints.get(param.name, Any)
        if annotation is RunContext or RunContext in get_args(annotation):
            context_param = param.name
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, default)
    tool_name = name or fn.__name__
    model = create_model(  # type: ignore[call-overload]
        f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    doc = inspect.getdoc(fn) or ""
    return Tool(
        name=tool_name,
        description=description or doc.split("\n\n")[0].strip(),
        fn=fn,
        arguments_model=model,
        context_param=context_param,
        **options,
    )


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    requires_approval: ApprovalRule = False,
    durable: bool = False,
    timeout: float | None = None,
    max_attempts: int | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    requires_approval: ApprovalRule = False,
    durable: bool = False,
    timeout: float | None = None,
    max_attempts: int | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a function into a :class:`Tool`; its argument schema comes from its type hints.

    A parameter annotated ``RunContext`` receives the turn's context and is hidden
    from the model. Sync functions run in a thread so they cannot block the worker.
    ``requires_approval`` and ``durable`` take the call out of the turn: see
    :class:`Tool`.
    """
    if not isinstance(requires_approval, bool) and not callable(requires_approval):
        raise ApprovalRuleError(
            f"requires_approval takes True, False or a function of the call's arguments "
            f"(such as lambda args: args['amount'] > 100); got {requires_approval!r}."
        )
    options = dict(
        requires_approval=requires_approval,
        durable=durable,
        timeout=timeout,
        max_attempts=max_attempts,
    )
    if fn is not None:
        return _build(fn, name, description, **options)
    return lambda f: _build(f, name, description, **options)


def _ask_user(question: str) -> str:
    """Ask the user a question and wait for the answer. Use it when you need
    information or a choice only the user can give."""
    raise RuntimeError("ask_user is answered by the user, through the engine")


ask_user: Tool = replace(_build(_ask_user, "ask_user", None), role="ask_user")
"""A tool the model calls to ask the user something; the run waits for the answer
(status AWAITING_INPUT) and the answer is the tool's result."""


def _run_by_client(**arguments: Any) -> str:
    raise RuntimeError("a client tool is run by the run's caller, through the engine")


def client_tool(spec: ClientTool) -> Tool:
    """The tool the model is offered for a client tool (see ``client_tools``)."""
    return Tool(
        name=spec.name,
        description=spec.description,
        fn=_run_by_client,
        arguments_model=None,
        schema=spec.parameters or {"type": "object", "properties": {}},
        role="client",
    )


def _delegate(input: str) -> str:
    raise RuntimeError("a sub-agent runs as a child workflow, through the engine")


def agent_tool(agent: str, description: str, *, name: str | None = None) -> Tool:
    """A tool that runs the registered agent ``agent`` on the model's ``input`` as a
    sub-agent: a child run with its own thread, whose usage counts in this run's."""
    built = _build(_delegate, name or agent.replace("-", "_"), description)
    return replace(built, role="agent", agent=agent)


class Toolset(Protocol):
    """Tools found at run time (an MCP server's: ``ratchet.agents.mcp_tools``)."""

    name: str

    async def tools(self) -> list[Tool]:
        """The tools as of now; called at the start of every turn, so keep it cached."""
        ...

    async def aclose(self) -> None:
        """Release what the toolset holds; it may be used again afterwards."""
        ...
