"""Models that leave out fields holding their default when serialised.

Messages and turn payloads are written to Temporal history on every turn; a
message is mostly its content, and ``"tool_calls":[],"name":null,...`` on each
one is pure overhead. Decoding restores the defaults, so round trips are exact.
"""

from __future__ import annotations

from typing import Any, Literal, get_origin

from pydantic import BaseModel, SerializerFunctionWrapHandler, model_serializer
from pydantic_core import PydanticUndefined


class CompactModel(BaseModel):
    @model_serializer(mode="wrap")
    def _without_defaults(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if not isinstance(data, dict):
            return data
        for name, field in type(self).model_fields.items():
            if name not in data or get_origin(field.annotation) is Literal:
                continue  # tags (discriminators) are always written
            if field.default_factory in (list, dict):
                if not data[name]:
                    del data[name]
            elif field.default is not PydanticUndefined and field.default_factory is None:
                value = getattr(self, name)
                if type(value) is type(field.default) and value == field.default:
                    del data[name]
        return data
