"""Packages are used through their public API: checked on the import graph.

Counted as grimp counts (``build_graph("ratchet")``, imports under ``TYPE_CHECKING``
and inside functions included): an import statement of a module with a ``_``
segment from another top-level package of ``ratchet``. The top-level modules
(``ratchet/errors.py``, ``ratchet/_exit.py``, ...) form one package; a package and
its subpackages are one package (``ratchet.agents`` re-exports ``ratchet.agents.models``).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections import defaultdict

import grimp

import ratchet

ALLOWED = {
    ("ratchet.activities", "ratchet.agents._engine"): (
        "the turn calls what agent code does not export (compaction, fitting the window, "
        "interceptors): one seam module, not an API for agent authors"
    ),
    ("ratchet.workflows", "ratchet.agents._engine"): (
        "the agent loop checks a typed answer (missing_answer) through the same seam"
    ),
    ("ratchet.client", "ratchet.agents._engine"): (
        "the host's view of committed state (StateExport) reads values with agent code's "
        "serializers; the client exports it"
    ),
    ("ratchet.client", "ratchet._temporal_internals"): (
        "the Temporal SDK internals Ratchet relies on, kept in one private module so "
        "that no user imports them and an SDK upgrade is checked in one place"
    ),
    ("ratchet.history", "ratchet._temporal_internals"): "as above",
    ("ratchet.workflows", "ratchet._temporal_internals"): "as above",
    ("ratchet.activities", "ratchet._handoff"): (
        "a process-local shortcut from a session's workflow to the turn it schedules in "
        "the same worker: shared state of two packages that may not import each other"
    ),
    ("ratchet.workflows", "ratchet._handoff"): "as above",
}
"""Private imports across packages that are allowed, with why. It may only shrink."""

PRODUCT = ("cli", "web", "evals", "deploy", "testing", "examples", "worker")
"""The product ring: built on the core through its public names only, no exception."""

HOST_VIEWS = {
    "AgentSession", "AgentRecord", "AgentStateExport", "AgentStatus", "Anchored",
    "ClientTool", "CustomEvent", "Decision", "EventBase", "ExecutionRecord", "Gap",
    "PendingView", "Retry", "RunEvent", "RunFinished", "RunFinishedData", "RunStarted",
    "RunStartedData", "SessionInfo", "SessionStatus", "StateChanged", "StateChangedData",
    "StateChangedEvent", "StateConflict", "StateEntry", "StateExport", "StatusChanged",
    "StatusData", "StepResult", "TextDelta", "ThreadData", "ToolCallData", "ToolCalled",
    "ToolResult", "ToolResultData", "TurnCompleted", "TurnCompletedData", "TurnStarted",
    "new_request_id",  # not a view: the id a host makes for an idempotent send
}  # fmt: skip
"""What ``ratchet.client`` re-exports from ``ratchet.types``, ``ratchet.agents`` and
``ratchet.wire``: the views its handles return, so a host imports them with the handles.
The one exception (with the top-level ``ratchet``) to "each name is exported once"."""


def package_of(module: str, graph: grimp.ImportGraph) -> str:
    parts = module.split(".")
    if len(parts) == 1 or (len(parts) == 2 and not graph.find_children(module)):
        return "ratchet"  # ratchet itself and its top-level modules
    return ".".join(parts[:2])


def is_private(module: str) -> bool:
    return any(p.startswith("_") and not p.startswith("__") for p in module.split(".")[1:])


def private_imports(graph: grimp.ImportGraph) -> list[tuple[str, str, int]]:
    """Every import statement of another package's private module: (importer, imported,
    line)."""
    found = []
    for importer in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(importer):
            if is_private(imported) and package_of(imported, graph) != package_of(importer, graph):
                found += [
                    (importer, imported, d["line_number"])
                    for d in graph.get_import_details(importer=importer, imported=imported)
                ]
    return found


def test_packages_import_each_others_private_modules_only_where_allowed() -> None:
    graph = grimp.build_graph("ratchet")
    found = private_imports(graph)
    not_allowed = [
        f"{importer}:{line} imports {imported}"
        for importer, imported, line in found
        if (package_of(importer, graph), imported) not in ALLOWED
    ]
    assert not_allowed == [], "import these from the package (add them to its __all__)"
    used = {(package_of(importer, graph), imported) for importer, imported, _ in found}
    assert sorted(set(ALLOWED) - used) == [], "an entry nothing needs: remove it"
    assert len(ALLOWED) <= 10


def test_the_product_ring_imports_no_private_module_of_another_package() -> None:
    graph = grimp.build_graph("ratchet")
    ring = [
        f"{importer}:{line} imports {imported}"
        for importer, imported, line in private_imports(graph)
        if package_of(importer, graph).removeprefix("ratchet.") in PRODUCT
    ]
    assert ring == []


def test_the_count_finds_a_private_import_across_packages_and_not_within_one() -> None:
    graph = grimp.ImportGraph()
    for module in ("ratchet", "ratchet.a", "ratchet.a._x", "ratchet.b", "ratchet.b._y"):
        graph.add_module(module)
    graph.add_module("ratchet._z")
    for importer, imported, line in [
        ("ratchet.b._y", "ratchet.b", 1),  # its own package
        ("ratchet.a", "ratchet.a._x", 1),  # its own private module
        ("ratchet.b._y", "ratchet.a._x", 2),
        ("ratchet.a._x", "ratchet._z", 3),  # a private top-level module
    ]:
        graph.add_import(importer=importer, imported=imported, line_number=line, line_contents="")
    assert private_imports(graph) == [
        ("ratchet.a._x", "ratchet._z", 3),
        ("ratchet.b._y", "ratchet.a._x", 2),
    ]


def public_packages() -> list[str]:
    found = ["ratchet"]
    for info in pkgutil.walk_packages(ratchet.__path__, "ratchet."):
        if info.ispkg and not is_private(info.name):
            found.append(info.name)
    return found


def test_each_public_name_is_exported_by_one_package() -> None:
    exporters: dict[str, set[str]] = defaultdict(set)
    for name in public_packages():
        if name == "ratchet":
            continue  # the top-level names: a shortcut to the first agent's imports
        home = "ratchet.agents" if name.startswith("ratchet.agents") else name
        for exported in getattr(importlib.import_module(name), "__all__", ()):
            exporters[exported].add(home)
    twice = {
        name: sorted(homes)
        for name, homes in exporters.items()
        if len(homes - {"ratchet.client"} if name in HOST_VIEWS else homes) > 1
    }
    assert twice == {}
    views = {n for n in HOST_VIEWS if "ratchet.client" in exporters[n]}
    assert views == HOST_VIEWS, "list only what ratchet.client re-exports"


def test_every_public_package_lists_its_names_and_each_imports() -> None:
    for name in public_packages():
        module = importlib.import_module(name)
        assert hasattr(module, "__all__"), f"{name} has no __all__"
        missing = [n for n in module.__all__ if not hasattr(module, n)]
        assert missing == [], f"{name}.__all__ names what it does not have"
