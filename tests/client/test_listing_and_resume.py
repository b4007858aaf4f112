"""The public listing and the public event offsets: what a host (the web server, a
front door scoping lists by owner) builds on, through ``AgentClient`` and handles."""

from __future__ import annotations

import asyncio
import time

import pytest

from ratchet.agents import ScriptedModel, ToolCallingAgent
from ratchet.client import AgentClient, WorkflowSummary
from ratchet.client._listing import listing_query
from ratchet.errors import InvalidInputError
from ratchet.wire import identity_of, indexed_identity
from ratchet.worker import build_worker


def test_a_filter_value_is_escaped_not_refused():
    """A JWT subject is an arbitrary string: a quote in a value is doubled and a
    backslash escaped, so it cannot end the quoted literal; an owner that a query would
    not take literally is matched as it is indexed (``indexed_identity``)."""
    owner = "o'brien \\ x' OR 'a'='a"
    query = listing_query(where={"AgentOwner": owner, "Team": "it's"}, agent="it's")
    assert "AgentName = 'it''s'" in query and "Team = 'it''s'" in query
    assert f"AgentOwner = '{indexed_identity(owner)}'" in query
    assert indexed_identity(owner).startswith("~") and identity_of(indexed_identity(owner)) == owner
    assert query.startswith("WorkflowType IN ('AgentSession')")
    with pytest.raises(InvalidInputError, match="not a search attribute name"):
        listing_query(where={"Owner = 'x' OR Owner": "y"})
    with pytest.raises(InvalidInputError, match="must be one of"):
        listing_query(status="SLEEPING")


async def _listed(client: AgentClient, count: int, **filters: object) -> list[WorkflowSummary]:
    """Visibility is eventually consistent: list until ``count`` rows match."""
    deadline = time.monotonic() + 30
    while True:
        rows = await client.list_sessions(runs=True, **filters)  # type: ignore[arg-type]
        if len(rows) >= count or time.monotonic() > deadline:
            return rows
        await asyncio.sleep(0.2)


async def test_the_listing_finds_a_value_with_a_quote_through_an_escaped_filter(
    agent_client: AgentClient, task_queue: str
):
    quoted, plain = f"o'brien-{task_queue}", f"obrien-{task_queue}"
    runs = [await agent_client.start_run(name, "hi") for name in (quoted, plain)]
    either = f"AgentName IN ('{plain}', 'o''brien-{task_queue}')"
    try:
        by_agent = await _listed(agent_client, 1, agent=quoted)
        by_where = await _listed(agent_client, 1, where={"AgentName": quoted})
        both = await _listed(agent_client, 2, query=either)
        # With quotes doubled only, the backslash escapes the first one and ends the
        # literal early: what follows would be read as query, not as the name.
        injected = await agent_client.list_sessions(runs=True, agent="\\' OR AgentName != ''")
    finally:
        for run in runs:
            await run.workflow.terminate("test over")
    assert [(row.id, row.agent, row.kind) for row in by_agent] == [(runs[0].id, quoted, "run")]
    assert [row.id for row in by_where] == [runs[0].id]
    assert {row.id for row in both} == {runs[0].id, runs[1].id}
    assert injected == []
    described = await agent_client.get_run(runs[0].id).describe()
    assert (described.agent, described.kind, described.open) == (quoted, "run", False)
    assert await agent_client.kind_of(runs[0].id) == "run"


async def test_a_watcher_resumes_after_the_last_offset_it_handled(agent_client: AgentClient):
    """Every event a watcher gets carries its offset; ``events(after=offset)`` gives
    each event after it once, and nothing before it."""
    agent = ToolCallingAgent(ScriptedModel(["first answer", "second answer"]))
    async with build_worker(agent_client, {"chat": agent}):
        session = await agent_client.start_session("chat")
        await session.send("one")
        await session.send("two")
        await session.close()
        seen = [event async for event in session.events()]
        offsets = [event.offset for event in seen]
        assert offsets == list(range(offsets[0], offsets[0] + len(seen)))  # type: ignore[operator]
        handled = seen[len(seen) // 2]
        assert handled.offset is not None
        resumed = [event async for event in session.events(after=handled.offset)]
        run = agent_client.get_run((await agent_client.start_run("chat", "hi")).id)
        await run.result()
        from_run = [event async for event in run.events()]
        last = from_run[2]
        assert last.offset is not None
        rest = [event async for event in run.events(after=last.offset)]
    assert [(e.offset, e.kind, e.text) for e in resumed] == [
        (e.offset, e.kind, e.text) for e in seen[len(seen) // 2 + 1 :]
    ]
    assert [(e.offset, e.kind) for e in rest] == [(e.offset, e.kind) for e in from_run[3:]]
    assert [e.offset for e in from_run] == list(range(len(from_run)))
    with pytest.raises(InvalidInputError, match="not both"):
        run.events(after=3, from_offset=4)
    # The offset is the reader's: it is not part of the event on the wire.
    assert "offset" not in handled.model_dump_json()
