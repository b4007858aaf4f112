"""Tools: plain Python functions the model can call, described by their type hints."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, get_args, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from .context import RunContext
from .messages import Message, ToolCall


@dataclass(frozen=True)
class Tool:
    """A callable the model may ask for, with the JSON schema of its arguments."""

    name: str
    description: str
    fn: Callable[..., Any]
    arguments_model: type[BaseModel]
    context_param: str | None = None

    @property
    def parameters(self) -> dict[str, Any]:
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

    async def invoke(self, call: ToolCall, context: RunContext) -> Message:
        """Run the call. Bad arguments and tool exceptions become an error message
        the model reads on its next turn, never an exception out of the turn."""
        try:
            raw = call.parsed_arguments()
        except ValueError as e:
            return Message.tool(
                call,
                f"Error: the arguments for {self.name} are not valid JSON ({e}). "
                f"Send a JSON object matching this schema: {json.dumps(self.parameters)}",
                is_error=True,
            )
        try:
            args = self.arguments_model.model_validate(raw)
        except ValidationError as e:
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
        kwargs = {name: getattr(args, name) for name in type(args).model_fields}
        if self.context_param:
            kwargs[self.context_param] = context
        try:
            if inspect.iscoroutinefunction(self.fn):
                value = await self.fn(**kwargs)
            else:
                # A sync tool must not block the worker's event loop.
                value = await asyncio.to_thread(self.fn, **kwargs)
        except Exception as e:  # noqa: BLE001 - the model decides what to do with a failed tool
            return Message.tool(
                call, f"Error: {self.name} failed: {type(e).__name__}: {e}", is_error=True
            )
        return Message.tool(call, _to_text(value))


def _to_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(value, default=str)


def _build(fn: Callable[..., Any], name: str | None, description: str | None) -> Tool:
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
    )


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a function into a :class:`Tool`; its argument schema comes from its type hints.

    A parameter annotated ``RunContext`` receives the turn's context and is hidden
    from the model. Sync functions run in a thread so they cannot block the worker.
    """
    if fn is not None:
        return _build(fn, name, description)
    return lambda f: _build(f, name, description)


ToolFunction = Callable[..., Any] | Callable[..., Awaitable[Any]]
