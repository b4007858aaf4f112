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
import shutil
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from temporalio import activity
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    ExternalStorage,
    StorageDriver,
    StorageDriverActivityInfo,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
    StorageDriverWorkflowInfo,
)

from ratchet.errors import ConfigurationError

DEFAULT_THRESHOLD = 256 * 1024
OWNERLESS = "ownerless"
"""Where a payload stored for no workflow goes (temporalio gives no target)."""
MAX_NAME = 200
"""Longest directory name a workflow id is written as (file systems allow 255 bytes)."""


class FileStorageDriver(StorageDriver):
    """Payload files, one directory per workflow id:
    ``<root>/workflows/<workflow id>/<64 hex>``, named by their SHA-256.

    A payload belongs to the workflow temporalio stores it for (a workflow's own
    payloads, its activities', a child's input under the child), so no file is
    shared by two workflows and ``delete_workflow`` removes one workflow's files
    and no other's. Writing the same payload twice for one workflow writes one file;
    a file is written under a temporary name and renamed, so a reader never sees
    half a payload. Claims written by Ratchet 0.1.0 (``<root>/sha256/<2 hex>/<64
    hex>``, shared by every workflow) are still read.
    """

    def __init__(self, root: str | Path, *, name: str = "ratchet-files") -> None:
        self.root = Path(root)
        self._name = name

    def name(self) -> str:
        return self._name

    def workflow_dir(self, workflow_id: str) -> Path:
        """The directory holding the payloads stored for ``workflow_id``."""
        return self.root / "workflows" / _dir_name(workflow_id)

    def _path(self, claim: StorageDriverClaim) -> tuple[str, Path]:
        data = claim.claim_data
        digest = data.get("sha256", "")
        owner = data.get("workflow")
        if owner is not None:
            if not owner or "/" in owner or "." in owner or "\\" in owner:  # not _dir_name's
                raise ConfigurationError(f"A payload claim names no valid directory: {owner!r}.")
            return digest, self.root / "workflows" / owner / digest
        return digest, self.root / "sha256" / digest[:2] / digest  # 0.1.0, shared

    async def store(
        self, context: StorageDriverStoreContext, payloads: Sequence[Payload]
    ) -> list[StorageDriverClaim]:
        owner = _owner(context.target)
        return await asyncio.to_thread(
            self._store_all, _dir_name(owner) if owner else OWNERLESS, payloads
        )

    def _store_all(self, owner: str, payloads: Sequence[Payload]) -> list[StorageDriverClaim]:
        claims = []
        for payload in payloads:
            data = payload.SerializeToString(deterministic=True)
            digest = hashlib.sha256(data).hexdigest()
            claim = StorageDriverClaim({"workflow": owner, "sha256": digest})
            _, path = self._path(claim)
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                partial = path.with_name(f"{digest}.{os.getpid()}.partial")
                partial.write_bytes(data)
                partial.replace(path)
            claims.append(claim)
        return claims

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        return await asyncio.to_thread(self._retrieve_all, claims)

    def _retrieve_all(self, claims: Sequence[StorageDriverClaim]) -> list[Payload]:
        payloads = []
        for claim in claims:
            digest, path = self._path(claim)
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                raise ConfigurationError(
                    f"Payload {digest[:12]}… is not in {self.root}: every client and worker "
                    "must use the same payload storage (a shared directory or bucket), and "
                    "the workflow that stored it must not have been deleted."
                ) from None
            if hashlib.sha256(data).hexdigest() != digest:
                raise ConfigurationError(f"Payload file {path} is corrupt (checksum mismatch).")
            payload = Payload()
            payload.ParseFromString(data)
            payloads.append(payload)
        return payloads

    def delete_workflow(self, workflow_id: str) -> int:
        """Delete every payload stored for ``workflow_id``; returns how many files."""
        folder = self.workflow_dir(workflow_id)
        if not folder.is_dir():
            return 0
        count = sum(1 for path in folder.rglob("*") if path.is_file())
        shutil.rmtree(folder, ignore_errors=True)
        return count


def _owner(target: StorageDriverWorkflowInfo | StorageDriverActivityInfo | None) -> str | None:
    """The workflow a payload is stored for. temporalio names none for a heartbeat
    sent by task token (a turn's checkpoint), so inside an activity it is the
    activity's workflow."""
    if isinstance(target, StorageDriverWorkflowInfo):
        return target.id
    if target is None and activity.in_activity():
        return activity.info().workflow_id
    return None


def _dir_name(workflow_id: str) -> str:
    """A workflow id as one directory name: percent-encoded (no ``/``, no ``..``),
    or a hash of it when too long to be a file name."""
    name = quote(workflow_id, safe="").replace(".", "%2E")
    if len(name) <= MAX_NAME:
        return name
    return "sha256-" + hashlib.sha256(workflow_id.encode()).hexdigest()


def external_storage(
    storage: ExternalStorage | StorageDriver | str | Path, threshold: int = DEFAULT_THRESHOLD
) -> ExternalStorage:
    """``ExternalStorage`` from a driver, a directory path, or as given."""
    if isinstance(storage, ExternalStorage):
        return storage
    if isinstance(storage, (str, Path)):
        storage = FileStorageDriver(storage)
    return ExternalStorage(drivers=[storage], payload_size_threshold=threshold)
