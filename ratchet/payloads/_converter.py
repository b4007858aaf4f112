"""Ratchet's data converter: pydantic JSON, with one type-adapter cache per process.

Temporal builds a payload converter for every workflow instance, and the stock
pydantic converter keeps its own cache of ``TypeAdapter``s (each with compiled
validators and serializers): every cached workflow rebuilt and kept its own for
the same few types. This converter writes exactly the same JSON; its adapters
and serializer are shared by every instance in the process.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any

from pydantic import TypeAdapter
from pydantic_core import SchemaSerializer
from pydantic_core.core_schema import any_schema
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import PydanticJSONPlainPayloadConverter
from temporalio.converter import (
    CompositePayloadConverter,
    DataConverter,
    DefaultFailureConverterWithEncodedAttributes,
    DefaultPayloadConverter,
    JSONPlainPayloadConverter,
    PayloadCodec,
)

from ratchet.types import decoding

_ADAPTERS = functools.lru_cache(maxsize=1024)(TypeAdapter)
_ANY = SchemaSerializer(any_schema())


class SharedPydanticJSONConverter(PydanticJSONPlainPayloadConverter):
    def __init__(self) -> None:
        self._schema_serializer = _ANY
        self._to_json_options = None
        self._type_adapter = _ADAPTERS

    def __setstate__(self, state: dict[str, Any]) -> None:
        vars(self).update(state)
        self._type_adapter = _ADAPTERS

    def from_payload(self, payload: Payload, type_hint: type | None = None) -> Any:
        with decoding():  # a recorded value: options are checked by the workflow
            return super().from_payload(payload, type_hint)


class RatchetPayloadConverter(CompositePayloadConverter):
    """The stock pydantic payload converter's encodings, sharing one adapter cache."""

    def __init__(self) -> None:
        super().__init__(*_encodings())


@functools.cache
def _encodings() -> tuple:
    """The encoding converters (stateless), built once: Temporal makes a payload
    converter for every workflow instance and local activity."""
    shared = SharedPydanticJSONConverter()
    return tuple(
        shared if isinstance(c, JSONPlainPayloadConverter) else c
        for c in DefaultPayloadConverter.default_encoding_payload_converters
    )


data_converter = DataConverter(payload_converter_class=RatchetPayloadConverter)
"""What ``AgentClient`` connects with (payloads as ``pydantic_data_converter`` writes them)."""


def with_codec(converter: DataConverter, codec: PayloadCodec | None) -> DataConverter:
    """``converter`` with ``codec``, or the ``EncryptionCodec`` RATCHET_ENCRYPTION_KEYS
    configures; failure messages and stack traces then go through the codec too."""
    if codec is None and os.environ.get("RATCHET_ENCRYPTION_KEYS") is not None:
        from ratchet.payloads._encryption import (
            EncryptionCodec,  # native code: keep it out of the sandbox
        )

        codec = EncryptionCodec.from_env()
    if codec is None:
        return converter
    return dataclasses.replace(
        converter,
        payload_codec=codec,
        failure_converter_class=DefaultFailureConverterWithEncodedAttributes,
    )
