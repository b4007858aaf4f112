"""Serializers, versioned state types and StateContext, without a server."""

from __future__ import annotations

import dataclasses
import json

import pytest
from pydantic import BaseModel

from ratchet.activities._resources import WorkerResources
from ratchet.agents import JSONSerializer, PickleSerializer, StateContext, state_schema
from ratchet.agents._serializers import upgrade
from ratchet.client import StateEntry
from ratchet.errors import (
    ConfigurationError,
    ResourceNotFoundError,
    ShareTokenError,
    StateIntegrityError,
    StateSchemaError,
    StateSerializationError,
)
from ratchet.types import Message, ShareToken, Usage

from ..state_agents import Cart, Opaque, Point, rich_values

KEY = "k" * 32


@pytest.mark.parametrize("key", list(rich_values()))
def test_json_round_trips_rich_types_through_json_text(key: str):
    value = rich_values()[key]
    serializer = JSONSerializer()
    data = json.loads(json.dumps(serializer.serialize(value)))  # as history stores it
    back = serializer.deserialize(data)
    assert back == value and type(back) is type(value)


def test_ratchets_own_classes_are_stored_by_their_public_name_so_a_move_keeps_them():
    serializer = JSONSerializer()
    stored = serializer.serialize({"m": Message.user("hi"), "u": Usage(input_tokens=3)})
    assert stored["m"]["class"] == "ratchet.agents:Message"  # not ratchet.agents._messages
    assert stored["u"]["class"] == "ratchet.agents:Usage"
    assert serializer.deserialize(json.loads(json.dumps(stored))) == {
        "m": Message.user("hi"),
        "u": Usage(input_tokens=3),
    }
    # What was stored by module path before loads while the module is there.
    by_module = {**stored["m"], "class": "ratchet.agents._messages:Message"}
    assert serializer.deserialize(by_module) == Message.user("hi")
    # Its home since 0.2 (ratchet.types) loads too; 0.2 still stores the 0.1.0 name, which
    # resolves through ratchet.agents' alias, so a worker rolled back to 0.1.0 reads it.
    by_home = {**stored["m"], "class": "ratchet.types:Message"}
    assert serializer.deserialize(by_home) == Message.user("hi")


def test_json_keeps_odd_dicts_and_floats():
    serializer = JSONSerializer()
    for value in [{"$type": "not a tag"}, {(1, 2): "tuple key"}, float("inf"), b"\x00\xff", []]:
        assert serializer.deserialize(json.loads(json.dumps(serializer.serialize(value)))) == value


def test_json_refusal_names_where_the_bad_value_is():
    with pytest.raises(StateSerializationError, match=r"value\['a'\]\[1\] is a builtins.object"):
        JSONSerializer().serialize({"a": [1, object()]})


def test_json_refuses_classes_another_process_could_not_import():
    @dataclasses.dataclass
    class Local:
        x: int

    with pytest.raises(StateSerializationError, match="defined in a function"):
        JSONSerializer().serialize(Local(1))


def test_json_refuses_to_load_what_is_not_a_stored_class():
    serializer = JSONSerializer()
    missing = {"$type": "model", "class": "tests.nowhere:Cart", "data": {}}
    with pytest.raises(StateSchemaError, match="cannot be imported here"):
        serializer.deserialize(missing)
    not_a_model = {"$type": "model", "class": "os:system", "data": {}}
    with pytest.raises(StateSchemaError, match="is not one"):
        serializer.deserialize(not_a_model)


def test_an_upgrade_chain_runs_in_order_and_newer_data_is_refused():
    @state_schema(3, upgrades={1: lambda d: {**d, "b": 0}, 2: lambda d: {**d, "c": d["b"] + 1}})
    class V3(BaseModel):
        a: int
        b: int
        c: int

    assert upgrade(V3, {"a": 1}, 1) == {"a": 1, "b": 0, "c": 1}
    assert upgrade(V3, {"a": 1, "b": 5}, 2) == {"a": 1, "b": 5, "c": 6}
    with pytest.raises(StateSchemaError, match="stored at schema version 4"):
        upgrade(V3, {}, 4)
    with pytest.raises(ConfigurationError, match="no upgrade from version 2"):
        state_schema(3, upgrades={1: lambda d: d})(Point)


def test_a_model_is_written_with_its_schema_version():
    data = JSONSerializer().serialize(Cart(items=[], currency="EUR"))
    assert data["schema"] == 2 and data["class"] == "tests.state_agents:Cart"


def test_pickle_is_signed_and_verified():
    serializer = PickleSerializer(KEY)
    data = serializer.serialize(Opaque("x"))
    assert serializer.deserialize(data).secret == "x"
    with pytest.raises(StateIntegrityError, match="signature does not match"):
        PickleSerializer("z" * 32).deserialize(data)
    rotated = PickleSerializer("n" * 32, previous_keys=[KEY])
    assert rotated.deserialize(data).secret == "x"
    with pytest.raises(StateIntegrityError, match="unsigned"):
        serializer.deserialize({"not": "signed"})


def test_pickle_needs_a_real_key(monkeypatch: pytest.MonkeyPatch):
    with pytest.raises(ConfigurationError, match="at least 32"):
        PickleSerializer("short")
    monkeypatch.delenv("RATCHET_STATE_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="RATCHET_STATE_KEY is not set"):
        PickleSerializer.from_env()


def test_state_is_read_lazily_so_untouched_state_costs_nothing():
    broken = StateEntry(data={"$type": "no-such-tag"}, version=3)
    state = StateContext({"big": broken})
    assert state.keys() == ["big"] and state.version("big") == 3
    assert state.changes == []
    with pytest.raises(StateSchemaError, match="unknown type tag"):
        state.get("big")


def test_update_reset_delete_and_keys_within_a_turn():
    state = StateContext({"n": StateEntry(data=1, version=4)})
    state.update("n", 2)
    state.update("m", Point(1, 2))
    assert state.get("n") == 2 and state.keys() == ["n", "m"]
    state.reset("n")
    assert state.get("n") == 1
    state.delete("n")
    assert "n" not in state and state.get("n", "gone") == "gone"
    assert [(c.key, c.base_version, c.deleted) for c in state.changes] == [
        ("m", 0, False),
        ("n", 4, True),
    ]


def test_get_returns_a_fresh_copy_and_converts_to_a_type():
    state = StateContext({"cart": StateEntry(data={"items": ["a"], "currency": "EUR"})})
    cart = state.get("cart", Cart)
    assert cart == Cart(items=["a"], currency="EUR")
    cart.items.append("b")  # changes nothing until update
    assert state.get("cart", Cart).items == ["a"]
    assert state.get("missing", Cart) is None
    assert state.get("missing", default=[]) == [] and state.get("missing", 0) == 0
    with pytest.raises(StateSchemaError, match="not a valid Point"):
        state.get("cart", Point)


def test_runtime_only_values_shadow_for_the_turn_and_are_never_serialised():
    state = StateContext({"db": StateEntry(data="dsn")})
    conn = object()
    state.update("db", conn, persist=False)
    assert state.get("db") is conn and state.changes == []
    state.reset("db")
    assert state.get("db") == "dsn"


def test_a_value_stored_by_another_serializer_says_which_to_configure():
    signed = StateEntry(data=PickleSerializer(KEY).serialize(1), serializer="pickle")
    with pytest.raises(StateSchemaError, match="stored by the 'pickle' serializer"):
        StateContext({"x": signed}).get("x")


def test_a_token_the_run_was_not_given_is_refused():
    token = ShareToken(id="share_1", owner="s", agent="planner", key="plan")
    with pytest.raises(ShareTokenError, match=r"shared=\[token\]"):
        StateContext().get(token)


async def test_worker_resources_open_close_and_name_what_they_have():
    closed: list[str] = []

    class Pool:
        def __init__(self, name: str) -> None:
            self.name = name

        def close(self) -> None:
            closed.append(self.name)

    async def make_b() -> Pool:
        return Pool("b")

    with pytest.raises(ConfigurationError, match="must be given as a factory"):
        WorkerResources({"a": Pool("a")})
    resources = WorkerResources({"a": lambda: Pool("a"), "b": make_b})
    with pytest.raises(ConfigurationError, match="not open"):
        resources["a"]
    async with resources.lifespan():
        assert resources["b"].name == "b" and "a" in resources
        with pytest.raises(ResourceNotFoundError, match="No worker resource 'c'"):
            resources["c"]
        assert resources.get("c") is None
    assert closed == ["b", "a"]
