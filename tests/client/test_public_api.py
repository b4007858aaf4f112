"""The public API: a short top-level list, each name in one place, loaded lazily."""

from __future__ import annotations

import subprocess
import sys

import pytest

import ratchet
import ratchet.agents
import ratchet.client


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
