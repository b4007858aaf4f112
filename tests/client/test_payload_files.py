"""``FileStorageDriver``: payloads kept per workflow, so deleting one workflow's
deletes no other's; claims written by Ratchet 0.1.0 (shared, content-addressed)
still read."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
    StorageDriverWorkflowInfo,
)
from temporalio.testing import ActivityEnvironment

from ratchet.errors import ConfigurationError
from ratchet.payloads import FileStorageDriver


def stored_for(workflow_id: str) -> StorageDriverStoreContext:
    return StorageDriverStoreContext(
        target=StorageDriverWorkflowInfo(id=workflow_id, namespace="default")
    )


PAYLOAD = Payload(metadata={"encoding": b"json/plain"}, data=b'"the same text"')


async def test_two_workflows_storing_the_same_payload_keep_a_file_each(tmp_path: Path):
    driver = FileStorageDriver(tmp_path)
    (mine,) = await driver.store(stored_for("session-a"), [PAYLOAD])
    (theirs,) = await driver.store(stored_for("session-b"), [PAYLOAD])

    assert driver.delete_workflow("session-a") == 1
    assert driver.delete_workflow("session-a") == 0
    assert await driver.retrieve(StorageDriverRetrieveContext(), [theirs]) == [PAYLOAD]
    with pytest.raises(ConfigurationError, match="deleted"):
        await driver.retrieve(StorageDriverRetrieveContext(), [mine])


async def test_a_store_from_0_1_0_still_reads_its_claims_and_new_payloads_go_per_workflow(
    tmp_path: Path,
):
    data = PAYLOAD.SerializeToString(deterministic=True)
    digest = hashlib.sha256(data).hexdigest()
    old = tmp_path / "sha256" / digest[:2] / digest  # 0.1.0's layout, shared by all
    old.parent.mkdir(parents=True)
    old.write_bytes(data)
    driver = FileStorageDriver(tmp_path)

    (new,) = await driver.store(stored_for("session-a"), [PAYLOAD])
    assert new.claim_data == {"workflow": "session-a", "sha256": digest}
    assert (tmp_path / "workflows" / "session-a" / digest).read_bytes() == data
    claim = StorageDriverClaim({"sha256": digest})
    assert await driver.retrieve(StorageDriverRetrieveContext(), [claim]) == [PAYLOAD]
    assert driver.delete_workflow("session-a") == 1 and old.exists()


async def test_a_payload_stored_for_no_target_inside_an_activity_is_its_workflows(
    tmp_path: Path,
):
    """temporalio names no target for a heartbeat sent by task token (a turn's
    checkpoint): it belongs to the activity's workflow, and goes with it."""
    driver = FileStorageDriver(tmp_path)
    (claim,) = await ActivityEnvironment().run(driver.store, StorageDriverStoreContext(), [PAYLOAD])
    assert claim.claim_data["workflow"] == "test"  # ActivityEnvironment's workflow id
    assert driver.delete_workflow("test") == 1


@pytest.mark.parametrize("workflow_id", ["../escape", "a/b", ".", "x" * 400, "rerun-1/s#1"])
async def test_any_workflow_id_is_one_directory_under_the_root(tmp_path: Path, workflow_id: str):
    driver = FileStorageDriver(tmp_path / "store")
    (claim,) = await driver.store(stored_for(workflow_id), [PAYLOAD])

    folder = driver.workflow_dir(workflow_id)
    assert folder.parent == tmp_path / "store" / "workflows" and len(folder.name) <= 200
    assert await driver.retrieve(StorageDriverRetrieveContext(), [claim]) == [PAYLOAD]
    assert driver.delete_workflow(workflow_id) == 1 and not folder.exists()


async def test_a_claim_naming_a_path_outside_the_store_is_refused(tmp_path: Path):
    claim = StorageDriverClaim({"workflow": "..", "sha256": "0" * 64})
    with pytest.raises(ConfigurationError, match="no valid directory"):
        await FileStorageDriver(tmp_path).retrieve(StorageDriverRetrieveContext(), [claim])
