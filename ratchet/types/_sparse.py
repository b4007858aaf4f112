"""Models that leave out fields holding their default when serialised.

Messages and turn payloads are written to Temporal history on every turn; a
message is mostly its content, and ``"tool_calls":[],"name":null,...`` on each
one is pure overhead. Decoding restores the defaults, so round trips are exact.
Literal fields (tags such as a discriminator) are always written.

Each defaulted field gets an ``exclude_if`` test when the class is created, so
pydantic's serializer (Rust) skips it; no Python runs per model instance.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Generator
from contextvars import ContextVar
from typing import Any, Literal, get_origin

from pydantic import BaseModel, TypeAdapter
from pydantic.fields import FieldInfo


@functools.cache
def type_adapter(kind: Any) -> TypeAdapter[Any]:
    """One TypeAdapter per type (building one costs far more than using it)."""
    return TypeAdapter(kind)


class SparseModel(BaseModel):
    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        changed = False
        for field in cls.model_fields.values():
            test = _is_default(field)
            if test is not None and field.exclude_if is None:
                field.exclude_if = test
                changed = True
        if changed:
            cls.model_rebuild(force=True)


def _is_default(field: FieldInfo) -> Callable[[Any], bool] | None:
    if get_origin(field.annotation) is Literal:
        return None
    factory = field.default_factory
    if factory in (list, dict) or get_origin(factory) in (list, dict):  # list[ToolCall] too
        return _is_empty
    if factory is not None:
        return _is_constant(factory)
    if field.is_required():
        return None
    default = field.default
    return lambda value: type(value) is type(default) and value == default


def _is_constant(factory: Callable[..., Any]) -> Callable[[Any], bool] | None:
    """The test for a function that always makes the same value (a whole-log view);
    ``None`` for one that does not (ids, times) or that needs its arguments. A
    model class as factory keeps its field written: web clients read those
    (``event.data``) without Ratchet's defaults."""
    if isinstance(factory, type):
        return None
    try:
        default, again = factory(), factory()
    except Exception:  # takes the model's data, or needs a workflow
        return None
    if default != again:
        return None
    return lambda value: type(value) is type(default) and value == default


def _is_empty(value: Any) -> bool:
    return not value


_DECODING: ContextVar[bool] = ContextVar("ratchet_decoding", default=False)


@contextlib.contextmanager
def decoding() -> Generator[None]:
    """Values built inside are decoded (from a history or a request), not written
    in code: option range checks leave them to the workflow (see CheckedOptions)."""
    token = _DECODING.set(True)
    try:
        yield
    finally:
        _DECODING.reset(token)


def is_decoding() -> bool:
    return _DECODING.get()
