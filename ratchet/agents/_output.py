"""Typed final answers: ``ToolCallingAgent(..., output_type=Invoice)``.

The model gives its final answer by calling the ``final_result`` tool, whose
arguments are the output type's JSON schema when it is a JSON object with fields (a
pydantic model, a dataclass, a TypedDict); any other type (a union, a list, a
``str``...) is wrapped as ``{"value": ...}``. The call is validated in the turn: an
invalid one (a missing wrapper too) goes back to the model as a tool error saying
what was wrong, and it tries again on the next turn, within ``max_turns``; a run
that ends there says what was wrong with the last answer (``missing_answer``). A
reply in plain text is accepted when it is the output type's JSON, and otherwise
sent back too.

The run's final message is the value's JSON and nothing else is stored: readers
parse it (``RunResult.output_as(Invoice)``).
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from pydantic import PydanticUserError, TypeAdapter, ValidationError

from ratchet.errors import ConfigurationError, ToolError
from ratchet.types import Message, ToolCall

from ._tools import Tool

T = TypeVar("T")

FINAL_RESULT = "final_result"
"""The tool a model calls with its typed final answer."""


class OutputSpec(Generic[T]):
    """What a typed final answer must look like, and how it is checked."""

    def __init__(self, output_type: Any) -> None:
        try:
            self.adapter: TypeAdapter[T] = TypeAdapter(output_type)
        except PydanticUserError as e:  # typing.TypedDict before Python 3.12, ...
            raise ConfigurationError(
                f"output_type={output_type!r} cannot be validated: {e.message}"
            ) from None
        self.name: str = getattr(output_type, "__name__", None) or str(output_type)
        schema = self.adapter.json_schema()
        schema.pop("title", None)
        self.wrapped = not _has_fields(schema)
        if self.wrapped:  # a tool's arguments are a JSON object
            defs = schema.pop("$defs", None)
            schema = {
                "type": "object",
                "properties": {"value": schema},
                "required": ["value"],
                "additionalProperties": False,
                **({"$defs": defs} if defs else {}),
            }
        self.tool = Tool(
            name=FINAL_RESULT,
            description=(
                f"Give your final answer as a {self.name}. Call this once you have it; "
                "the run ends with it."
            ),
            fn=self._accept,
            arguments_model=None,
            schema=schema,
        )

    def from_call(self, call: ToolCall) -> T:
        """The value a valid ``final_result`` call carries (raises ValueError else,
        with what was wrong: a ValidationError, or a missing ``value`` wrapper)."""
        return self._value(call.parsed_arguments())

    def from_text(self, text: str) -> T:
        """A plain reply read as the output type's JSON (raises ValidationError)."""
        return self.adapter.validate_json(text)

    def message(self, value: T) -> Message:
        """The run's final message: the value's JSON."""
        return Message.assistant(self.adapter.dump_json(value).decode())

    def retry(self, error: ValidationError) -> Message:
        """What the model reads after a plain reply that was not a valid answer."""
        return Message.user(
            f"{_NOT_VALID}{self.name}: {_problems(error)}. Give your final "
            f"answer by calling {FINAL_RESULT}."
        )

    def _value(self, arguments: dict[str, Any]) -> T:
        if not self.wrapped:
            return self.adapter.validate_python(arguments)
        if set(arguments) != {"value"}:
            raise ValueError(
                f'a {self.name} goes in {{"value": ...}}: call {FINAL_RESULT} with the single '
                f"argument value (got {', '.join(sorted(arguments)) or 'no arguments'})"
            )
        return self.adapter.validate_python(arguments["value"])

    def _accept(self, **arguments: Any) -> str:
        """The tool's function: what the model reads of an answer the turn could not
        take (a valid one ends the run before any tool runs)."""
        try:
            self._value(arguments)
        except ValidationError as e:
            raise ToolError(f"not a valid {self.name}: {_problems(e)}.") from e
        except ValueError as e:
            raise ToolError(f"not a valid {self.name}: {e}.") from e
        return "Final answer accepted."


def missing_answer(messages: list[Message]) -> str | None:
    """Why ``messages`` (a turn's) hold no typed answer, if they show it: the error
    the model read about its last ``final_result`` call or plain reply."""
    named = {c.id: c.name for m in messages for c in m.tool_calls}
    for message in reversed(messages):
        if message.role == "tool" and message.is_error:
            if named.get(message.tool_call_id or "") == FINAL_RESULT:
                return message.text.removeprefix("Error: ")
        elif message.role == "user" and message.text.startswith(_NOT_VALID):
            return message.text.removeprefix("Your reply is ")
    return None


_NOT_VALID = "Your reply is not a valid "


def _has_fields(schema: dict[str, Any]) -> bool:
    """Whether ``schema`` (a TypeAdapter's) is a JSON object with named fields, read
    through a top-level ``$ref`` (a model that refers to itself)."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        schema = schema.get("$defs", {}).get(ref.removeprefix("#/$defs/"), {})
    return schema.get("type") == "object" and "properties" in schema


def _problems(error: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or '(answer)'}: {e['msg']}" for e in error.errors()
    )
