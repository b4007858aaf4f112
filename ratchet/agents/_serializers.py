"""How agent state is stored: pluggable serializers and versioned state types.

A serializer turns a state value into JSON-compatible data (what Temporal writes
to history) and back. ``JSONSerializer`` is the default: readable in the UI,
checked on every ``update``, and rich types come back as the types they were.
``PickleSerializer`` stores any picklable object, signed with HMAC-SHA256.

A pydantic model or dataclass stored in state can carry a schema version
(:func:`state_schema`); older stored data is upgraded when it is read.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import importlib
import math
import os
import pickle
import warnings
from collections.abc import Callable, Mapping
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from enum import Enum
from typing import Any, Protocol, TypeVar, cast, runtime_checkable
from uuid import UUID
from zoneinfo import ZoneInfo

from pydantic import BaseModel

from ratchet.errors import (
    ConfigurationError,
    StateIntegrityError,
    StateSchemaError,
    StateSerializationError,
)
from ratchet.types import type_adapter

from ._moved import TO_TYPES

T = TypeVar("T")
Upgrade = Callable[[dict[str, Any]], dict[str, Any]]
TAG = "$type"


@runtime_checkable
class StateSerializer(Protocol):
    """Turns state values into JSON-compatible data and back.

    ``name`` is stored with every value, so a value is always read back by the
    serializer that wrote it. ``serialize`` must raise
    :class:`~ratchet.errors.StateSerializationError` for a value it cannot store.
    """

    name: str

    def validate(self, value: Any) -> None: ...

    def serialize(self, value: Any) -> Any: ...

    def deserialize(self, data: Any) -> Any: ...


@dataclasses.dataclass(frozen=True)
class StateSchema:
    version: int
    upgrades: Mapping[int, Upgrade]


def state_schema(version: int, *, upgrades: Mapping[int, Upgrade] | None = None):
    """Give a pydantic model or dataclass stored in state a schema version.

    ``upgrades`` maps a version to a function taking that version's data (a
    JSON dict) to the next version's. Stored data of an older version is upgraded
    step by step when it is read; data stored without a version counts as 1::

        @state_schema(2, upgrades={1: lambda d: {"items": d["items"], "currency": "EUR"}})
        class Cart(BaseModel):
            items: list[str]
            currency: str
    """
    if version < 1:
        raise ConfigurationError(f"state_schema(version={version}): versions start at 1.")
    missing = [v for v in range(1, version) if v not in (upgrades or {})]

    def decorate(cls: type[T]) -> type[T]:
        if missing and upgrades:
            raise ConfigurationError(
                f"state_schema({version}) on {cls.__qualname__} has no upgrade from version "
                f"{', '.join(map(str, missing))}; give one for every version below {version}."
            )
        cls.__ratchet_state_schema__ = StateSchema(version, dict(upgrades or {}))  # type: ignore[attr-defined]
        return cls

    return decorate


def schema_of(cls: type) -> StateSchema:
    return getattr(cls, "__ratchet_state_schema__", None) or StateSchema(1, {})


def upgrade(cls: type, data: Any, stored: int) -> Any:
    """Bring ``data`` stored at schema version ``stored`` up to ``cls``'s version."""
    schema = schema_of(cls)
    if stored > schema.version:
        raise StateSchemaError(
            f"{cls.__qualname__} was stored at schema version {stored}, but this code knows "
            f"version {schema.version}: deploy the newer code "
            "to every worker and client that reads it."
        )
    while stored < schema.version:
        step = schema.upgrades.get(stored)
        if step is None:
            raise StateSchemaError(
                f"{cls.__qualname__} was stored at schema version {stored} and there is no upgrade "
                f"from it; add one: @state_schema({schema.version}, upgrades={{{stored}: ...}})."
            )
        try:
            data = step(data)
        except Exception as e:  # noqa: BLE001 - any failure of user code, named with its place
            raise StateSchemaError(
                f"Upgrading {cls.__qualname__} from schema version {stored} to {stored + 1} "
                f"failed: {type(e).__name__}: {e}. Fix the upgrade function for version "
                f"{stored} in @state_schema({schema.version}, upgrades=...) and deploy it; "
                "the stored data is unchanged."
            ) from e
        stored += 1
    return data


class JSONSerializer:
    """The default serializer: JSON in history, checked when a value is stored.

    Plain JSON values are stored as they are. datetime (with its zone), date,
    time, timedelta, UUID, Decimal, bytes, Enum members, sets, tuples, dicts with
    non-string keys, dataclasses and pydantic models are stored with a
    ``"$type"`` tag and come back as the same types. Enum, dataclass and model
    classes must be importable by module path (defined at a module's top level).
    """

    name = "json"

    def validate(self, value: Any) -> None:
        self.serialize(value)

    def serialize(self, value: Any) -> Any:
        return _encode(value, "value")

    def deserialize(self, data: Any) -> Any:
        return _decode(data)


def _encode(value: Any, where: str) -> Any:
    if isinstance(value, Enum):
        return {
            TAG: "enum",
            "class": _path(type(value), where),
            "value": _encode(value.value, where),
        }
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {TAG: "float", "value": repr(value)}
    if isinstance(value, datetime):
        encoded = {TAG: "datetime", "value": value.isoformat()}
        if isinstance(value.tzinfo, ZoneInfo):
            encoded["zone"] = value.tzinfo.key
        return encoded
    if isinstance(value, date | time):
        return {TAG: type(value).__name__, "value": value.isoformat()}
    if isinstance(value, timedelta):
        return {TAG: "timedelta", "value": value.total_seconds()}
    if isinstance(value, UUID | Decimal):
        return {TAG: type(value).__name__.lower(), "value": str(value)}
    if isinstance(value, bytes):
        return {TAG: "bytes", "value": base64.b64encode(value).decode()}
    if isinstance(value, BaseModel) or _is_dataclass_instance(value):
        return _encode_object(value, where)
    if isinstance(value, tuple):
        members = cast(tuple[Any, ...], value)
        return {TAG: "tuple", "items": [_encode(v, f"{where}[{i}]") for i, v in enumerate(members)]}
    if isinstance(value, set | frozenset):
        members = cast(set[Any] | frozenset[Any], value)
        items = [_encode(v, f"{where}{{}}") for v in members]
        return {TAG: type(members).__name__, "items": sorted(items, key=repr)}
    if isinstance(value, list):
        return [_encode(v, f"{where}[{i}]") for i, v in enumerate(cast(list[Any], value))]
    if isinstance(value, dict):
        mapping = cast(dict[Any, Any], value)
        if all(isinstance(k, str) for k in mapping) and TAG not in mapping:
            return {k: _encode(v, f"{where}[{k!r}]") for k, v in mapping.items()}
        return {
            TAG: "dict",
            "items": [
                [_encode(k, f"{where} key"), _encode(v, f"{where}[{k!r}]")]
                for k, v in mapping.items()
            ],
        }
    raise StateSerializationError(
        f"{where} is a {type(value).__module__}.{type(value).__qualname__}, which the JSON "
        "serializer cannot store. Store plain data, a dataclass or a pydantic model; keep a "
        "connection or client out of state (use update(..., persist=False) for the rest of "
        "the turn, or a worker resource); or give the agent a PickleSerializer."
    )


def _encode_object(value: Any, where: str) -> dict[str, Any]:
    cls = cast(type[Any], type(value))
    try:
        data = (
            value.model_dump(mode="json")
            if isinstance(value, BaseModel)
            else type_adapter(cls).dump_python(value, mode="json")
        )
    except Exception as e:
        raise StateSerializationError(
            f"{where} ({cls.__qualname__}) cannot be stored as JSON: {e}. Give its fields "
            "types pydantic can serialise, or give the agent a PickleSerializer."
        ) from e
    kind = "model" if isinstance(value, BaseModel) else "dataclass"
    encoded = {TAG: kind, "class": _path(cls, where), "data": data}
    version = schema_of(cls).version
    if version != 1:
        encoded["schema"] = version
    return encoded


def _decode(data: Any) -> Any:
    if isinstance(data, list):
        return [_decode(v) for v in cast(list[Any], data)]
    if not isinstance(data, dict):
        return data
    fields = cast(dict[str, Any], data)
    tag = fields.get(TAG)
    if tag is None:
        return {k: _decode(v) for k, v in fields.items()}
    decode = _DECODERS.get(tag)
    if decode is None:
        raise StateSchemaError(f"Stored state has an unknown type tag {tag!r}.")
    return decode(fields)


def _decode_datetime(data: dict[str, Any]) -> datetime:
    value = datetime.fromisoformat(data["value"])
    if "zone" in data:
        value = value.astimezone(ZoneInfo(data["zone"]))
    return value


def _decode_object(data: dict[str, Any]) -> Any:
    cls = _import(data["class"], data[TAG])
    raw = upgrade(cls, data["data"], data.get("schema", 1))
    try:
        if issubclass(cls, BaseModel):
            return cls.model_validate(raw)
        return type_adapter(cls).validate_python(raw)
    except Exception as e:
        raise StateSchemaError(
            f"Stored {data['class']} no longer fits the class: {e}. If the class changed, "
            "raise its version with @state_schema and register an upgrade."
        ) from e


_DECODERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "enum": lambda d: _import(d["class"], "enum")(_decode(d["value"])),
    "float": lambda d: float(d["value"]),
    "datetime": _decode_datetime,
    "date": lambda d: date.fromisoformat(d["value"]),
    "time": lambda d: time.fromisoformat(d["value"]),
    "timedelta": lambda d: timedelta(seconds=d["value"]),
    "uuid": lambda d: UUID(d["value"]),
    "decimal": lambda d: Decimal(d["value"]),
    "bytes": lambda d: base64.b64decode(d["value"]),
    "tuple": lambda d: tuple(_decode(v) for v in d["items"]),
    "set": lambda d: {_decode(v) for v in d["items"]},
    "frozenset": lambda d: frozenset(_decode(v) for v in d["items"]),
    "dict": lambda d: {_decode(k): _decode(v) for k, v in d["items"]},
    "model": _decode_object,
    "dataclass": _decode_object,
}


def _is_dataclass_instance(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _path(cls: type, where: str = "value") -> str:
    if cls.__module__ == "__main__" or "<locals>" in cls.__qualname__:
        raise StateSerializationError(
            f"{where} is a {cls.__qualname__} defined in "
            f"{'__main__' if cls.__module__ == '__main__' else 'a function'}; a worker in "
            "another process could not import it to read it back. Define the class at the "
            "top level of an importable module."
        )
    if cls.__module__.startswith("ratchet.") and _exported(cls):
        return f"{_public_package(cls.__qualname__)}:{cls.__qualname__}"
    return f"{cls.__module__}:{cls.__qualname__}"


PUBLIC = "ratchet.types"
"""Where Ratchet's own state-storable classes (``Message``, ``Usage``...) are exported:
a class is stored by its public name, so moving the module that defines it does not
break stored state. A class of your own is stored by its module path: keep it
importable there (as for pickle), or re-export it from there after a move."""


def _exported(cls: type) -> bool:
    package = importlib.import_module(PUBLIC)
    name = cls.__qualname__
    return name in getattr(package, "__all__", ()) and getattr(package, name, None) is cls


def _public_package(name: str) -> str:
    """``ratchet.agents`` for the names 0.1.0 exported there (``Message``, ``Usage``...),
    so that a worker rolled back to 0.1.0 still reads what this one stored; the alias
    there resolves them here. Until 0.3, which stores them as ``ratchet.types``."""
    return "ratchet.agents" if name in TO_TYPES else PUBLIC


def _import(path: str, kind: str) -> type[Any]:
    module_name, _, qualname = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        with warnings.catch_warnings():  # a stored old path is no caller's to change
            warnings.simplefilter("ignore", DeprecationWarning)
            for part in qualname.split("."):
                obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise StateSchemaError(
            f"Stored state names the class {path}, which cannot be imported here ({e}); "
            "deploy the module that defines it to this worker or client."
        ) from e
    expected = {"enum": Enum, "model": BaseModel}.get(kind)
    ok = isinstance(obj, type) and (
        issubclass(obj, expected) if expected else dataclasses.is_dataclass(obj)
    )
    if not ok:
        raise StateSchemaError(f"Stored state names {path} as a {kind}, and it is not one.")
    return obj


class PickleSerializer:
    """Stores any picklable object, signed with HMAC-SHA256. Opt-in.

    Unpickling can run arbitrary code, so a value is unpickled only when its
    signature matches ``key``; unsigned or tampered data is refused with
    :class:`~ratchet.errors.StateIntegrityError`. Anyone who holds the key, or who
    can change what your workers import, can still run code on them: keep the
    key secret, give each deployment its own, and prefer ``JSONSerializer``
    whenever your state is data. ``previous_keys`` are still accepted for reading,
    so a key can be rotated without losing stored state.
    """

    name = "pickle"
    PREFIX = "hmac-sha256:"
    MIN_KEY_BYTES = 32

    def __init__(self, key: bytes | str, *, previous_keys: list[bytes | str] = ()) -> None:  # type: ignore[assignment]
        self._keys = [_key_bytes(k) for k in (key, *previous_keys)]

    @classmethod
    def from_env(cls, variable: str = "RATCHET_STATE_KEY") -> PickleSerializer:
        """Read the key from an environment variable (call it in the worker, not at import)."""
        key = os.environ.get(variable)
        if not key:
            raise ConfigurationError(
                f"PickleSerializer.from_env: {variable} is not set. Set it to a secret of at "
                "least 32 bytes, e.g. the output of: python -c 'import secrets; "
                "print(secrets.token_hex(32))'"
            )
        return cls(key)

    def validate(self, value: Any) -> None:
        self.serialize(value)

    def serialize(self, value: Any) -> str:
        try:
            body = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:
            raise StateSerializationError(
                f"value ({type(value).__qualname__}) cannot be pickled: {e}. Keep it out of "
                "persisted state (update(..., persist=False) or a worker resource)."
            ) from e
        mac = hmac.new(self._keys[0], body, hashlib.sha256).digest()
        return f"{self.PREFIX}{_b64(mac)}:{_b64(body)}"

    def deserialize(self, data: Any) -> Any:
        if not isinstance(data, str) or not data.startswith(self.PREFIX):
            raise StateIntegrityError(
                "Refused to unpickle unsigned state: a PickleSerializer value must carry an "
                "HMAC-SHA256 signature. It was not written by PickleSerializer, or was altered."
            )
        try:
            mac_text, body_text = data[len(self.PREFIX) :].split(":", 1)
            mac, body = base64.b64decode(mac_text), base64.b64decode(body_text)
        except ValueError as e:
            raise StateIntegrityError(f"Refused malformed signed state: {e}.") from e
        if not any(
            hmac.compare_digest(mac, hmac.new(k, body, hashlib.sha256).digest()) for k in self._keys
        ):
            raise StateIntegrityError(
                "Refused to unpickle state whose signature does not match: it was tampered "
                "with or signed with another key (pass the old key in previous_keys=[...])."
            )
        return pickle.loads(body)  # noqa: S301 - signature verified above


def _key_bytes(key: bytes | str) -> bytes:
    raw = key.encode() if isinstance(key, str) else key
    if len(raw) < PickleSerializer.MIN_KEY_BYTES:
        raise ConfigurationError(
            f"PickleSerializer key is {len(raw)} bytes; use at least "
            f"{PickleSerializer.MIN_KEY_BYTES} (python -c 'import secrets; "
            "print(secrets.token_hex(32))')."
        )
    return raw


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
