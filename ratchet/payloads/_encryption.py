"""Payload encryption: a Temporal ``PayloadCodec`` that compresses and encrypts.

Every payload a client or worker writes (inputs, results, summaries, failure
messages) is sealed with AES-256-GCM before it reaches the Temporal server; the
server and anyone reading history without the keys see only ciphertext. Keys are
named: the payload's metadata carries the id of the key that sealed it, so a new
key can take over encoding while older keys still decode::

    RATCHET_ENCRYPTION_KEYS="k2:<base64 32 bytes>,k1:<base64 32 bytes>"   # first = active

``ratchet codec-key`` prints a fresh ``id:key`` entry.
"""

from __future__ import annotations

import base64
import binascii
import os
import secrets
import zlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from google.protobuf.message import DecodeError
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

from ratchet.errors import ConfigurationError, PayloadDecryptionError

ENV_VAR = "RATCHET_ENCRYPTION_KEYS"
ENCODING = b"binary/encrypted"
"""The metadata encoding the Temporal UI and CLI recognise as encrypted."""
KEY_ID = "encryption-key-id"
COMPRESSION = "ratchet-compression"
KEY_BYTES = 32
_NONCE_BYTES = 12
_AAD_PREFIX = b"ratchet.payloads._encryption.v1"


def generate_key(key_id: str | None = None) -> str:
    """A fresh ``id:base64key`` entry for ``RATCHET_ENCRYPTION_KEYS``."""
    key_id = key_id or f"k{datetime.now(UTC):%Y%m%d}-{secrets.token_hex(3)}"
    _check_key_id(key_id)
    return f"{key_id}:{base64.b64encode(AESGCM.generate_key(bit_length=256)).decode()}"


def parse_keys(text: str, source: str = ENV_VAR) -> dict[str, bytes]:
    """``"kid1:BASE64,kid2:BASE64"`` as ``{kid: key}``, in order (the first is active)."""
    keys: dict[str, bytes] = {}
    entries = [e.strip() for e in text.split(",") if e.strip()]
    if not entries:
        raise ConfigurationError(
            f"{source} is empty. Set it to one or more comma-separated id:base64key "
            "entries, the active key first; `ratchet codec-key` prints a new one."
        )
    for entry in entries:
        key_id, sep, encoded = entry.partition(":")
        key_id = key_id.strip()
        if not sep or not key_id or not encoded.strip():
            raise ConfigurationError(
                f"{source} has an entry without an id and a key: {_shown(entry)!r}. "
                "Each entry is id:base64key, e.g. k1:<44 base64 characters>; "
                "`ratchet codec-key` prints one."
            )
        try:
            key = base64.b64decode(encoded.strip(), validate=True)
        except (binascii.Error, ValueError):
            raise ConfigurationError(
                f"{source}: the key of {key_id!r} is not valid base64. "
                "Use the output of `ratchet codec-key`."
            ) from None
        if key_id in keys:
            raise ConfigurationError(f"{source} lists key id {key_id!r} twice; ids must differ.")
        keys[key_id] = _checked_key(key_id, key, source)
    return keys


class EncryptionCodec(PayloadCodec):
    """Compresses (zlib, when that makes it smaller) and encrypts every payload with
    AES-256-GCM under the active key; decodes with whichever key a payload names.

    Payloads that are not encrypted pass through ``decode`` untouched, so histories
    written before encryption was turned on stay readable.
    """

    def __init__(self, keys: Mapping[str, bytes], *, active: str | None = None) -> None:
        if not keys:
            raise ConfigurationError(
                "EncryptionCodec needs at least one key: EncryptionCodec({'k1': key}) "
                f"or set {ENV_VAR} and use EncryptionCodec.from_env()."
            )
        for key_id, key in keys.items():
            _check_key_id(key_id)
            _checked_key(key_id, key, "EncryptionCodec")
        self.active = active if active is not None else next(iter(keys))
        if self.active not in keys:
            raise ConfigurationError(
                f"The active key {self.active!r} is not among the keys given "
                f"({', '.join(keys)}); add it or pick one of them."
            )
        self._ciphers = {key_id: AESGCM(bytes(key)) for key_id, key in keys.items()}

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, var: str = ENV_VAR) -> EncryptionCodec:
        """Keys from ``RATCHET_ENCRYPTION_KEYS`` (``kid:BASE64,...``, active first)."""
        text = (os.environ if env is None else env).get(var)
        if text is None:
            raise ConfigurationError(
                f"{var} is not set. Set it to id:base64key entries (active first); "
                "`ratchet codec-key` prints a new one."
            )
        return cls(parse_keys(text, var))

    @property
    def key_ids(self) -> list[str]:
        return list(self._ciphers)

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.encode_one(p) for p in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.decode_one(p) for p in payloads]

    def encode_one(self, payload: Payload) -> Payload:
        plain = payload.SerializeToString()
        packed = zlib.compress(plain)
        compression = b"zlib" if len(packed) < len(plain) else b"none"
        body = packed if compression == b"zlib" else plain
        key_id = self.active.encode()
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._ciphers[self.active].encrypt(nonce, body, _aad(key_id, compression))
        return Payload(
            metadata={"encoding": ENCODING, KEY_ID: key_id, COMPRESSION: compression},
            data=nonce + sealed,
        )

    def decode_one(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != ENCODING:
            return payload
        key_id = payload.metadata.get(KEY_ID, b"").decode(errors="replace")
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            raise PayloadDecryptionError(
                f"A payload is encrypted with key {key_id!r}, which this process does not "
                f"have (it has: {', '.join(self._ciphers)}). Add that key to {ENV_VAR} "
                "(old keys stay listed after the active one)."
            )
        compression = payload.metadata.get(COMPRESSION, b"none")
        nonce, sealed = payload.data[:_NONCE_BYTES], payload.data[_NONCE_BYTES:]
        try:
            body = cipher.decrypt(nonce, sealed, _aad(key_id.encode(), compression))
            if compression == b"zlib":
                body = zlib.decompress(body)
            elif compression != b"none":
                raise ValueError(f"unknown compression {compression!r}")
            return Payload.FromString(body)
        except (InvalidTag, ValueError, zlib.error, DecodeError):
            raise PayloadDecryptionError(
                f"A payload encrypted with key {key_id!r} failed authentication: it was "
                f"altered, or {ENV_VAR} holds a different key under that id."
            ) from None


def _aad(key_id: bytes, compression: bytes) -> bytes:
    # Binds the metadata to the ciphertext: a payload moved to another key id, or
    # relabelled as (un)compressed, fails to decrypt.
    return b"\0".join((_AAD_PREFIX, key_id, compression))


def _check_key_id(key_id: str) -> None:
    if not key_id or any(c in key_id for c in ",: \t\n"):
        raise ConfigurationError(
            f"Key id {key_id!r} is not usable: it must be non-empty, without commas, "
            "colons or spaces (e.g. k1 or k20250101)."
        )


def _checked_key(key_id: str, key: bytes, source: str) -> bytes:
    if not isinstance(key, bytes | bytearray) or len(key) != KEY_BYTES:
        size = len(key) if isinstance(key, bytes | bytearray) else type(key).__name__
        raise ConfigurationError(
            f"{source}: key {key_id!r} is {size} bytes; AES-256 keys are {KEY_BYTES} bytes "
            "(44 base64 characters). Generate one with `ratchet codec-key`."
        )
    return bytes(key)


def _shown(entry: str) -> str:
    # Never echo a whole key in an error message.
    return entry if len(entry) <= 8 else entry[:4] + "…"
