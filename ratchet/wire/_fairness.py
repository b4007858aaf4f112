"""Fairness keys as Temporal takes them: at most 64 bytes, so a longer owner or
tenant id is shortened the same way by the workflows (each turn's key) and by
``ratchet fleet weight`` (the key an operator pins)."""

from __future__ import annotations

import hashlib

FAIRNESS_KEY_BYTES = 64
"""Temporal's limit on a fairness key."""
_HASH_CHARS = 16


def fairness_key(text: str) -> str:
    """``text``, or when it is longer than Temporal allows, a readable prefix and a
    hash of the whole (``<prefix>~<16 hex>``): distinct long ids stay distinct keys."""
    raw = text.encode()
    if len(raw) <= FAIRNESS_KEY_BYTES:
        return text
    digest = hashlib.sha256(raw).hexdigest()[:_HASH_CHARS]
    prefix = raw[: FAIRNESS_KEY_BYTES - _HASH_CHARS - 1].decode(errors="ignore")
    return f"{prefix}~{digest}"
