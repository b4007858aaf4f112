"""The suite's lanes and its xdist groups (tests/conftest.py), checked on the tests this
run collected: in the whole suite, every test."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).parent
PRODUCT = {"cli", "web", "evals"}
MODULE_FIXTURES = {"web", "web_replica", "worker"}
"""tests/conftest.py's module-scoped fixtures: a ``ratchet web`` process and a worker."""


def _lane(item: pytest.Item) -> list[str]:
    return [lane for lane in ("core", "product") if item.get_closest_marker(lane)]


def test_every_test_is_in_one_lane_by_its_folder(request: pytest.FixtureRequest):
    items = request.session.items
    assert request.node in items
    for item in items:
        folder = item.path.relative_to(TESTS).parts[0]
        assert _lane(item) == ["product" if folder in PRODUCT else "core"], item.nodeid


def test_a_module_sharing_a_web_process_or_worker_runs_on_one_xdist_worker(
    request: pytest.FixtureRequest,
):
    for item in request.session.items:
        if MODULE_FIXTURES & set(getattr(item, "fixturenames", ())):
            group = item.get_closest_marker("xdist_group")
            assert group is not None, item.nodeid
            assert group.args == (item.path.relative_to(TESTS.parent).as_posix(),)
