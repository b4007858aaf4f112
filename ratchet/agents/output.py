"""Typed final answers: ``ToolCallingAgent(..., output_type=Invoice)``.

The model gives its final answer by calling the ``final_result`` tool, whose
arguments are the output type's JSON schema (a type that is not a JSON object, a
union or a list say, is wrapped as ``{"value": ...}``). The call is validated in the
turn like any tool's arguments: an invalid one goes back to the model as a tool
error, and it tries again on the next turn, within ``max_turns``. A reply in plain
text is accepted when it is the output type's JSON, and otherwise sent back too.

The run's final message is the value's JSON and nothing else is stored: readers
parse it (``RunResult.output_as(Invoice)``).
"""

from __future__ import annotations

from typing import Any, Generic, TypeGuard, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, create_model

from .messages import Message, ToolCall
from .tools import Tool

T = TypeVar("T")

FINAL_RESULT = "final_result"
"""The tool a model calls with its typed final answer."""


class OutputSpec(Generic[T]):
    """What a typed final answer must look like, and how it is checked."""

    def __init__(self, output_type: Any) -> None:
        self.adapter: TypeAdapter[T] = TypeAdapter(output_type)
        self.name: str = getattr(output_type, "__name__", None) or str(output_type)
        arguments: type[BaseModel]
        if _is_model(output_type):
            arguments, self.wrapped = output_type, False
        else:  # a tool's arguments are a JSON object
            field: tuple[Any, Any] = (output_type, ...)
            arguments = create_model(
                f"{FINAL_RESULT}_arguments",
                __config__=ConfigDict(extra="forbid"),
                value=field,
            )
            self.wrapped = True
        self.tool = Tool(
            name=FINAL_RESULT,
            description=(
                f"Give your final answer as a {self.name}. Call this once you have it; "
                "the run ends with it."
            ),
            fn=_accepted,
            arguments_model=arguments,
        )

    def from_call(self, call: ToolCall) -> T:
        """The value a valid ``final_result`` call carries (raises ValueError else)."""
        arguments = call.parsed_arguments()
        return self.adapter.validate_python(arguments["value"] if self.wrapped else arguments)

    def from_text(self, text: str) -> T:
        """A plain reply read as the output type's JSON (raises ValidationError)."""
        return self.adapter.validate_json(text)

    def message(self, value: T) -> Message:
        """The run's final message: the value's JSON."""
        return Message.assistant(self.adapter.dump_json(value).decode())

    def retry(self, error: ValidationError) -> Message:
        """What the model reads after a plain reply that was not a valid answer."""
        return Message.user(
            f"Your reply is not a valid {self.name}: {_problems(error)}. Give your final "
            f"answer by calling {FINAL_RESULT}."
        )


def _is_model(output_type: Any) -> TypeGuard[type[BaseModel]]:
    return isinstance(output_type, type) and issubclass(output_type, BaseModel)


def _accepted(**_: Any) -> str:
    return "Final answer accepted."


def _problems(error: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or '(answer)'}: {e['msg']}" for e in error.errors()
    )
