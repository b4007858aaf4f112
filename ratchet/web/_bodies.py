"""What the HTTP API takes and returns, beyond Ratchet's own models."""

from __future__ import annotations

from typing import Any, Literal

from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import to_jsonable_python

from ratchet.wire import SessionOptions

SESSION_ID = r"^[^/?#%\s]+$"
"""A session id goes in URLs (``/v1/sessions/{id}``): no slash, ``?``, ``#``, ``%``
or white space."""
MAX_TEXT = 200_000  # characters in one message; --max-message bounds its bytes too


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NewSession(_Body):
    agent: str = Field(min_length=1, max_length=200)
    session_id: str | None = Field(default=None, min_length=1, max_length=200, pattern=SESSION_ID)
    options: SessionOptions | None = None
    state: dict[str, Any] | None = None
    """An export (``GET /v1/sessions/{id}/state``) to start from."""

    @field_validator("options", mode="before")
    @classmethod
    def _known_options(cls, value: Any) -> Any:
        """Options are lenient on the wire (old payloads keep loading); from a person,
        a misspelt or misplaced option is an error, not a silent default."""
        if isinstance(value, dict) and (unknown := SessionOptions.unknown_options(value)):
            raise ValueError(f"unknown option {', '.join(unknown)}")
        return value


class NewMessage(_Body):
    text: str = Field(min_length=1, max_length=MAX_TEXT)


class NewDecision(_Body):
    """A decision on what a run waits for. ``scope``: ``call`` (the default) decides
    this call; ``session`` with an approval also allows its tool without asking for
    the rest of the session (``approve(..., always=True)``)."""

    id: str = Field(min_length=1, max_length=200)
    """The pending tool call's id, or the question's."""
    decision: Literal["approve", "reject", "answer"]
    reason: str | None = Field(default=None, max_length=4_000)
    answer: str | None = Field(default=None, max_length=MAX_TEXT)
    scope: Literal["call", "session"] | None = None


class NewFork(_Body):
    at_turn: int | None = Field(default=None, ge=0)
    at_message: str | None = None
    session_id: str | None = Field(default=None, min_length=1, max_length=200, pattern=SESSION_ID)


class Created(BaseModel):
    id: str


def full(value: Any) -> Any:
    """JSON-ready ``value`` with every field, defaults included. Ratchet's models
    leave defaults out when they are written to history; an HTTP client should not
    have to know them."""
    if isinstance(value, BaseModel):
        fields = type(value).model_fields
        return {
            field.alias or name: full(getattr(value, name))
            for name, field in fields.items()
            if not field.exclude
        }
    if isinstance(value, list | tuple):
        return [full(item) for item in value]
    if isinstance(value, dict):
        return {str(key): full(item) for key, item in value.items()}
    return to_jsonable_python(value)


def out(value: Any, status_code: int = 200) -> JSONResponse:
    """The response for ``value``, every field included (see ``full``)."""
    return JSONResponse(full(value), status_code=status_code)
