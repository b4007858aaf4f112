"""ratchet.testing's own guarantees. The tests a user would write with it (a 24-hour
approval timeout in seconds, a session message waiting while time is skipped) are
examples/testing/test_billing.py, which tests/cli/test_examples.py runs."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ratchet.agents import ScriptedModel, ToolCallingAgent, ask_user
from ratchet.errors import ConfigurationError
from ratchet.testing import RatchetTestEnvironment

pytestmark = pytest.mark.slow  # starts its own dev server


def asks() -> ToolCallingAgent:
    model = ScriptedModel([ScriptedModel.call("ask_user", question="Which city?")])
    return ToolCallingAgent(model, [ask_user])


async def test_skipping_time_needs_an_environment_that_skips():
    async with await RatchetTestEnvironment.start() as plain:
        async with plain.worker({"asks": asks}):
            handle = await plain.client.start_run("asks", "hello")
            await handle.wait_for_pending()
            with pytest.raises(ConfigurationError, match=r"start\(time_skipping=True\)"):
                await plain.skip(handle, timedelta(hours=24))
            await handle.cancel()
