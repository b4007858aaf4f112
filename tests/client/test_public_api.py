"""The public API: a short top-level list, each name in one place, loaded lazily."""

from __future__ import annotations

import importlib
import pickle
import re
import subprocess
import sys

import pytest

import ratchet
import ratchet.agents
import ratchet.client
import ratchet.errors
import ratchet.worker
from ratchet.errors import RatchetError


def test_the_top_level_names_are_few_and_all_resolve():
    assert len(ratchet.__all__) <= 20
    for name in ratchet.__all__:
        assert getattr(ratchet, name) is not None, name


@pytest.mark.slow  # a child process
def test_importing_ratchet_loads_no_temporal_client():
    code = "import sys, ratchet; print('temporalio.client' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stderr


def test_agent_code_gets_agent_names_and_hosts_get_the_views():
    host_views = {"AgentRecord", "AgentStatus", "StateExport", "PendingView", "Decision"}
    assert not host_views & set(ratchet.agents.__all__)
    assert host_views <= set(ratchet.client.__all__)
    assert {"KeepLastTurns", "Summarize", "DropToolResults"} <= set(ratchet.agents.__all__)


def test_a_name_ratchet_does_not_have_is_an_attribute_error():
    try:
        ratchet.AgentRunner  # noqa: B018 - the attribute access is the test
    except AttributeError as e:
        assert "AgentRunner" in str(e)
    else:
        raise AssertionError("ratchet.AgentRunner should not exist")


@pytest.mark.parametrize("module", [ratchet.worker, ratchet.errors], ids=lambda m: m.__name__)
def test_worker_and_errors_list_every_public_name_they_define(module):
    defined = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == module.__name__
    }
    assert defined and defined <= set(module.__all__)
    assert all(getattr(module, name) is not None for name in module.__all__)


def test_every_error_is_exported_and_drawn_in_the_tree():
    found, errors = [RatchetError], set()
    while found:
        cls = found.pop()
        found += cls.__subclasses__()
        if cls.__module__ == "ratchet.errors" and cls.__qualname__ == cls.__name__:
            errors.add(cls.__name__)  # not run_failed()'s classes, made as they are needed
    assert errors <= set(ratchet.errors.__all__)
    tree = ratchet.errors.__doc__ or ""
    assert [name for name in sorted(errors) if not re.search(rf"\b{name}\b", tree)] == []


def test_the_caches_build_worker_takes_are_exported_where_they_live():
    """docs/how-it-works.md sizes a worker's cache with ``ThreadCache(max_bytes=...)``."""
    import ratchet.activities

    assert {"ThreadCache", "StateCache", "ResourceFactory"} <= set(ratchet.activities.__all__)


@pytest.mark.parametrize(
    ("old", "name", "home"),
    [
        ("ratchet.agents", "Message", "ratchet.types"),
        ("ratchet.agents", "Usage", "ratchet.types"),
        ("ratchet.agents", "TextDelta", "ratchet.types"),
        ("ratchet.testing", "ScriptedModel", "ratchet.agents"),
        ("ratchet.client", "AgentState", "ratchet.types:AgentRecord"),
        ("ratchet.types", "ExecutionState", "ratchet.types:ExecutionRecord"),
    ],
)
def test_a_name_that_moved_imports_from_its_old_path_with_a_warning(
    old: str, name: str, home: str
) -> None:
    """0.1.0's paths keep working until 0.3 (CHANGELOG), each the very same object."""
    module, _, new_name = home.partition(":")
    moved = getattr(importlib.import_module(module), new_name or name)
    with pytest.warns(DeprecationWarning, match=new_name or name):
        assert getattr(importlib.import_module(old), name) is moved
    assert name not in importlib.import_module(old).__all__


def test_a_message_pickled_by_its_0_1_0_module_path_loads() -> None:
    """0.1.0 pickled ``ratchet.agents._messages.Message``; the module moved to ratchet.types."""
    from ratchet.types import Message

    stored = pickle.dumps(Message.user("hi"), protocol=0).replace(
        b"ratchet.types._messages", b"ratchet.agents._messages"
    )
    assert b"ratchet.agents._messages" in stored
    assert pickle.loads(stored) == Message.user("hi")
