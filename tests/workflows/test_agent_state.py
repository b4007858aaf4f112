"""Agent state through real runs: turn transactions, rich types, signed pickle,
export and load, resources and runtime-only values."""

from __future__ import annotations

import base64
import json
import pickle
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError

from ratchet.activities._state_refs import StateCache
from ratchet.agents import PickleSerializer, RunContext
from ratchet.client import AgentClient, StateExport
from ratchet.errors import RunFailedError, ShareTokenError
from ratchet.wire import RunOptions
from ratchet.worker import build_worker

from ..history import attempts, events, of_type
from ..state_agents import Booby, Cart, Connection, Opaque, StepAgent, rich_values
from ..user_workflows import ForeignToken, SharedPlan

FAST_RETRY = RunOptions(initial_retry_interval=timedelta(milliseconds=100))
KEY = "k" * 32


async def turn_results(handle) -> list[dict]:
    """The JSON result of every completed turn activity, in order."""
    completed = of_type(await events(handle), EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)
    return [
        json.loads(e.activity_task_completed_event_attributes.result.payloads[0].data)
        for e in completed
    ]


async def test_failed_attempt_is_discarded_and_only_changed_keys_travel(
    agent_client: AgentClient,
):
    seen: list[tuple[int, int, int]] = []

    async def first(context: RunContext) -> None:
        context.state.update("counter", 1)
        context.state.update("profile", {"name": "Ada", "plan": "pro"})

    async def second(context: RunContext) -> None:
        counter = context.state.get("counter")
        seen.append((context.attempt, counter, context.state.version("counter")))
        context.state.update("counter", counter + 1)
        assert context.state.get("counter") == counter + 1  # visible for the rest of the turn
        if context.attempt == 1:
            raise RuntimeError("the model connection dropped")

    async def third(context: RunContext) -> str:
        return "done"  # never touches state

    agents = {"counter": lambda: StepAgent(first, second, third)}
    async with build_worker(agent_client, agents):
        handle = await agent_client.start_run("counter", "count", options=FAST_RETRY)
        await handle.result()
        state = await handle.agent_state()
        changes = await handle.state_changes()

    # Attempt 2 of turn 2 saw turn 1's committed value, not attempt 1's update.
    assert seen == [(1, 1, 1), (2, 1, 1)]
    assert await attempts(handle) == [1, 2, 1]
    assert state.get("counter") == 2 and state.version("counter") == 2
    assert state.get("profile") == {"name": "Ada", "plan": "pro"}
    assert state.version("profile") == 1
    results = await turn_results(handle)
    assert [sorted(c["key"] for c in r.get("state", [])) for r in results] == [
        ["counter", "profile"],
        ["counter"],
        [],
    ]
    assert "state" not in results[2]  # a turn without state changes carries no state at all
    assert [(c.keys, c.turn) for c in changes] == [
        ({"counter": 1, "profile": 1}, 1),
        ({"counter": 2}, 2),
    ]


async def test_rich_types_round_trip_through_a_run(agent_client: AgentClient):
    values = rich_values()
    read_back: dict[str, object] = {}

    async def store(context: RunContext) -> None:
        for key, value in values.items():
            context.state.update(key, value)

    async def load(context: RunContext) -> str:
        read_back.update({key: context.state.get(key) for key in context.state.keys()})
        return "ok"

    async with build_worker(agent_client, {"rich": lambda: StepAgent(store, load)}):
        handle = await agent_client.start_run("rich", "store")
        await handle.result()
        export = await handle.agent_state()

    for key, value in values.items():
        for got in (read_back[key], export.get(key)):
            assert got == value, key
            assert type(got) is type(value), key
    when = read_back["when"]
    assert when.tzinfo is not None and str(when.tzinfo) == "Europe/Oslo"  # type: ignore[union-attr]
    assert type(read_back["nested"]["ids"][0]).__name__ == "UUID"  # type: ignore[index]


async def test_json_serializer_refuses_a_connection_naming_the_key(agent_client: AgentClient):
    async def store(context: RunContext) -> None:
        context.state.update("db", {"conn": Connection("postgres://")})

    async with build_worker(agent_client, {"bad": lambda: StepAgent(store)}):
        handle = await agent_client.start_run("bad", "store")
        with pytest.raises(RunFailedError) as failure:
            await handle.result()
    assert failure.value.error_type == "StateSerializationError"
    assert "State key 'db'" in failure.value.cause
    assert "tests.state_agents.Connection" in failure.value.cause
    assert "persist=False" in failure.value.cause
    assert await attempts(handle) == [1]  # a mistake in code is not retried


async def test_signed_pickle_round_trips_and_tampered_or_unsigned_state_is_refused(
    agent_client: AgentClient, tmp_path: Path
):
    signer = PickleSerializer(KEY)
    read: list[str] = []

    async def store(context: RunContext) -> None:
        context.state.update("opaque", Opaque("s3cret"))

    async def load(context: RunContext) -> str:
        read.append(context.state.get("opaque").secret)
        return "read"

    agents = {
        "vault": lambda: StepAgent(store, load, serializer=PickleSerializer(KEY)),
        "reader": lambda: StepAgent(load, serializer=PickleSerializer(KEY)),
    }
    async with build_worker(agent_client, agents):
        first = await agent_client.start_run("vault", "store")
        await first.result()
        export = (await first.agent_state()).model_dump(mode="json")
        assert read == ["s3cret"]
        assert StateExport.load(export).get("opaque", serializers=[signer]).secret == "s3cret"

        # Tampered: the pickle body changed, the signature kept.
        entry = export["agents"][0]["entries"]["opaque"]
        prefix, mac, body = entry["data"].split(":")
        evil = base64.b64encode(pickle.dumps(Booby(str(tmp_path / "pwned")))).decode()
        entry["data"] = f"{prefix}:{mac}:{evil}"
        tampered = await agent_client.start_run("reader", "load", state=export)
        with pytest.raises(RunFailedError, match="signature does not match") as failure:
            await tampered.result()
        assert failure.value.error_type == "StateIntegrityError"

        # Unsigned: a bare pickle where a signed value belongs.
        entry["data"] = evil
        unsigned = await agent_client.start_run("reader", "load", state=export)
        with pytest.raises(RunFailedError, match="unsigned") as failure:
            await unsigned.result()
        assert failure.value.error_type == "StateIntegrityError"
    assert not (tmp_path / "pwned").exists()  # neither payload was ever unpickled


async def test_exported_state_loads_into_a_new_session_and_continues(agent_client: AgentClient):
    async def fill(context: RunContext) -> str:
        context.state.update("cart", Cart(items=["book"], currency="NOK"))
        context.state.update("visits", 1)
        return "filled"

    async def add(context: RunContext) -> str:
        cart = context.state.get("cart", Cart)
        context.state.update("cart", cart.model_copy(update={"items": [*cart.items, "pen"]}))
        context.state.update("visits", context.state.get("visits") + 1)
        return "added"

    agents = {"shop": lambda: StepAgent(fill), "shop2": lambda: StepAgent(add)}
    async with build_worker(agent_client, agents):
        first = await agent_client.start_run("shop", "fill")
        await first.result()
        saved = json.dumps(await first.export_state())  # e.g. to a file or a database

        second = await agent_client.start_run("shop2", "add", state=saved)
        await second.result()
        before, after = StateExport.load(saved), await second.agent_state()

    assert after.get("cart") == Cart(items=["book", "pen"], currency="NOK")
    assert after.get("visits") == 2
    assert after.version("cart") == before.version("cart") + 1
    assert after.agent().session_id != before.agent().session_id


async def test_v1_export_is_migrated_by_the_registered_upgrade(agent_client: AgentClient):
    v1_export = {  # what the code before Cart got its currency field exported
        "format": "ratchet.state",
        "format_version": 1,
        "agents": [
            {
                "agent": "shop",
                "entries": {
                    "cart": {
                        "data": {
                            "$type": "model",
                            "class": "tests.state_agents:Cart",
                            "data": {"items": ["lamp"]},
                        },
                        "version": 4,
                    }
                },
            }
        ],
    }
    assert StateExport.load(v1_export).get("cart") == Cart(items=["lamp"], currency="EUR")
    seen: list[Cart] = []

    async def read(context: RunContext) -> str:
        seen.append(context.state.get("cart"))
        context.state.update("cart", seen[-1])  # written back at schema version 2
        return "ok"

    async with build_worker(agent_client, {"shop": lambda: StepAgent(read)}):
        handle = await agent_client.start_run("shop", "read", state=v1_export)
        await handle.result()
        export = await handle.export_state()
    assert seen == [Cart(items=["lamp"], currency="EUR")]
    stored = export["agents"][0]["entries"]["cart"]
    assert stored["version"] == 5 and stored["data"]["schema"] == 2


async def test_resources_are_created_once_per_worker_and_closed_at_shutdown(
    agent_client: AgentClient,
):
    made: list[Connection] = []
    used: list[int] = []

    async def connect() -> Connection:
        made.append(Connection("postgres://db"))
        return made[-1]

    async def use(context: RunContext) -> None:
        used.append(id(context.resources["db"]))
        assert not context.resources["db"].closed

    async def use_and_finish(context: RunContext) -> str:
        await use(context)
        return "done"

    agents = {"user": lambda: StepAgent(use, use_and_finish)}
    async with build_worker(agent_client, agents, resources={"db": connect}):
        for _ in range(3):
            await agent_client.run("user", "query")
        assert len(made) == 1 and not made[0].closed
    assert len(made) == 1 and made[0].closed
    assert len(used) == 6 and set(used) == {id(made[0])}


async def test_an_unknown_resource_fails_the_turn_with_the_names_it_has(
    agent_client: AgentClient,
):
    async def use(context: RunContext) -> str:
        return context.resources["cache"]

    async with build_worker(
        agent_client, {"user": lambda: StepAgent(use)}, resources={"db": lambda: object()}
    ):
        handle = await agent_client.start_run("user", "query")
        with pytest.raises(
            RunFailedError, match=r"No worker resource 'cache'; this worker has: db"
        ):
            await handle.result()
    assert await attempts(handle) == [1]


async def test_a_runtime_only_value_lives_one_turn_and_never_reaches_history(
    agent_client: AgentClient,
):
    later: list[object] = []

    async def first(context: RunContext) -> None:
        token = Opaque("tok-XYZ-runtime-only")  # not even JSON-serialisable
        context.state.update("session_token", token, persist=False)
        assert context.state.get("session_token") is token
        context.state.update("kept", "kept-ABC-persisted")

    async def second(context: RunContext) -> str:
        later.append(context.state.get("session_token"))
        return "ok"

    async with build_worker(agent_client, {"t": lambda: StepAgent(first, second)}):
        handle = await agent_client.start_run("t", "go")
        await handle.result()
        raw = b"".join(e.SerializeToString() for e in await events(handle))
    assert b"kept-ABC-persisted" in raw  # the search does find stored values
    assert b"tok-XYZ" not in raw
    assert later == [None]


def plan_agents() -> dict:
    async def planner(context: RunContext) -> str | None:
        if "plan" not in context.state:
            context.state.update("plan", ["outline"])
            context.state.share("plan", write=True)
            return "planned"
        context.state.update("plan", [*context.state.get("plan"), "revised"])
        return None

    async def writer(context: RunContext) -> str | None:
        token = context.state.share_tokens[0]
        plan = context.state.get(token)
        if plan == ["outline"]:
            context.state.update(token, [*plan, "draft"])
            return "drafted"
        context.state.update(token, [*plan, "edited"])
        return None

    async def report(context: RunContext) -> str:
        return f"conflicts={len(context.state.conflicts)}"

    async def reader(context: RunContext) -> str:
        token = context.state.share_tokens[0]
        try:
            context.state.update(token, [])
        except ShareTokenError as e:
            return f"{context.state.get(token)} | {e}"
        return "wrote through a read-only token"

    return {
        "planner": lambda: StepAgent(planner, report),
        "writer": lambda: StepAgent(writer, report),
        "reader": lambda: StepAgent(reader),
    }


async def test_share_tokens_let_agents_of_a_session_share_a_key_and_conflicts_are_reported(
    agent_client: AgentClient,
):
    async with build_worker(agent_client, plan_agents(), workflows=[SharedPlan]):
        result = await agent_client.temporal.execute_workflow(
            SharedPlan.run,
            id=f"shared-{uuid.uuid4().hex[:8]}",
            task_queue=agent_client.task_queue,
        )
    drafted, revised, edited, read = result["outputs"]
    assert drafted == "drafted"
    # Exactly one of the two concurrent writes lost the race; its next turn was told.
    assert sorted([revised, edited]) == ["conflicts=0", "conflicts=1"]
    (conflict,) = result["conflicts"]
    assert conflict["key"] == "plan" and conflict["owner_agent"] == "planner"
    assert (conflict["expected_version"], conflict["actual_version"]) == (2, 3)
    assert result["version"] == 3
    winner = ["outline", "draft", "revised" if edited == "conflicts=1" else "edited"]
    loser = ["outline", "draft", "edited" if edited == "conflicts=1" else "revised"]
    assert result["plan"] == winner
    winning_agent = "planner" if edited == "conflicts=1" else "writer"
    assert result["changes"] == [["planner", 1], ["writer", 2], [winning_agent, 3]]
    # The losing write is not lost: the conflict carries it.
    assert conflict["changes"][0]["data"] == loser
    assert read.startswith(f"{winner} | The token for planner:plan (read-only) does not allow")


async def test_a_token_from_another_session_fails_the_run_clearly(agent_client: AgentClient):
    async with build_worker(agent_client, plan_agents(), workflows=[ForeignToken]):
        handle = await agent_client.temporal.start_workflow(
            ForeignToken.run,
            id=f"foreign-{uuid.uuid4().hex[:8]}",
            task_queue=agent_client.task_queue,
        )
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
    assert "was not granted in this workflow" in str(failure.value.cause)


async def turn_inputs(handle) -> list[dict]:
    scheduled = of_type(await events(handle), EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    return [
        json.loads(e.activity_task_scheduled_event_attributes.input.payloads[0].data)
        for e in scheduled
    ]


@pytest.mark.parametrize("cached", [True, False], ids=["warm worker", "cold worker"])
async def test_unchanged_state_travels_by_reference(agent_client: AgentClient, cached: bool):
    big = "b" * 5000
    seen: list[int] = []

    async def store(context: RunContext) -> None:
        context.state.update("doc", big)
        context.state.update("n", 1)

    async def bump(context: RunContext) -> None:
        assert context.state.get("doc") == big
        context.state.update("n", context.state.get("n") + 1)

    async def read(context: RunContext) -> str:
        seen.append(context.state.get("n"))
        return context.state.get("doc")[:3]

    cache = StateCache(max_entries=100 if cached else 0)  # 0: every value is fetched
    agents = {"doc": lambda: StepAgent(store, bump, bump, read)}
    async with build_worker(agent_client, agents, state_cache=cache):
        handle = await agent_client.start_run("doc", "go")
        assert (await handle.result()).output == "bbb"
    assert seen == [3]
    inputs = await turn_inputs(handle)
    # Turn 1 wrote the document once; later inputs name it by the write that made it.
    assert all(big not in json.dumps(i) for i in inputs)
    assert [sorted(i.get("state_refs", {})) for i in inputs] == [
        [],
        ["doc", "n"],
        ["doc", "n"],
        ["doc", "n"],
    ]
    assert len({i["state_refs"]["doc"] for i in inputs[1:]}) == 1
    assert (cache.hits, cache.misses) == ((6, 0) if cached else (0, 6))
