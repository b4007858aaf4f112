"""External payload storage: payloads over a threshold live outside Temporal history.

Temporal refuses a payload over 2 MB. With external storage configured on the
client (and so on the workers built from it), the data converter stores large
payloads through a driver and writes only a small reference into history;
reading the history resolves the reference again. ``FileStorageDriver`` keeps
payloads as files under a directory: local disk for development, a shared
filesystem (NFS, EFS, a mounted volume) for several workers. On S3 or GCS use
temporalio's own drivers (``temporalio.contrib.aws.s3driver``,
``temporalio.contrib.gcp.gcsdriver``) with the same ``payload_storage`` argument.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    ExternalStorage,
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)

from ratchet.errors import ConfigurationError

DEFAULT_THRESHOLD = 256 * 1024


class FileStorageDriver(StorageDriver):
    """Content-addressed payload files: ``<root>/sha256/<2 hex>/<64 hex>``.

    Writing the same payload twice writes one file; a file is written under a
    temporary name and renamed, so a reader never sees half a payload.
    """

    def __init__(self, root: str | Path, *, name: str = "ratchet-files") -> None:
        self.root = Path(root)
        self._name = name

    def name(self) -> str:
        return self._name

    def _path(self, digest: str) -> Path:
        return self.root / "sha256" / digest[:2] / digest

    async def store(
        self, context: StorageDriverStoreContext, payloads: Sequence[Payload]
    ) -> list[StorageDriverClaim]:
        return await asyncio.to_thread(self._store_all, payloads)

    def _store_all(self, payloads: Sequence[Payload]) -> list[StorageDriverClaim]:
        claims = []
        for payload in payloads:
            data = payload.SerializeToString(deterministic=True)
            digest = hashlib.sha256(data).hexdigest()
            path = self._path(digest)
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                partial = path.with_name(f"{digest}.{os.getpid()}.partial")
                partial.write_bytes(data)
                partial.replace(path)
            claims.append(StorageDriverClaim({"sha256": digest}))
        return claims

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        return await asyncio.to_thread(self._retrieve_all, claims)

    def _retrieve_all(self, claims: Sequence[StorageDriverClaim]) -> list[Payload]:
        payloads = []
        for claim in claims:
            digest = claim.claim_data.get("sha256", "")
            path = self._path(digest)
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                raise ConfigurationError(
                    f"Payload {digest[:12]}… is not in {self.root}: every client and worker "
                    "must use the same payload storage (a shared directory or bucket)."
                ) from None
            if hashlib.sha256(data).hexdigest() != digest:
                raise ConfigurationError(f"Payload file {path} is corrupt (checksum mismatch).")
            payload = Payload()
            payload.ParseFromString(data)
            payloads.append(payload)
        return payloads


def external_storage(
    storage: ExternalStorage | StorageDriver | str | Path, threshold: int = DEFAULT_THRESHOLD
) -> ExternalStorage:
    """``ExternalStorage`` from a driver, a directory path, or as given."""
    if isinstance(storage, ExternalStorage):
        return storage
    if isinstance(storage, (str, Path)):
        storage = FileStorageDriver(storage)
    return ExternalStorage(drivers=[storage], payload_size_threshold=threshold)
