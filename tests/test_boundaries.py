"""Packages use each other by public names (STYLE.md 5f): the product ring (the CLI,
the web server, evaluations, deployment, testing, the examples and the worker) imports
the core as any user would, through package ``__init__`` modules, never another
package's ``_module``."""

from __future__ import annotations

from pathlib import Path

import grimp

import ratchet

RATCHET = Path(ratchet.__file__).parent
PRODUCT_RING = ("cli", "web", "evals", "deploy", "testing", "examples", "worker")
DATA_TYPES = {
    f"ratchet.agents.{name}"
    for name in (
        "_messages",
        "_state",
        "_events",
        "_pending",
        "_usage",
        "_state_context",
        "_state_export",
        "_status",
        "_parts",
        "_spans",
        "_sparse",
        "_client_tools",
    )
}
"""Ignored for now: the shared data types move to ``ratchet.types``, and a codemod
rewrites every import of them (and of ``ratchet.wire._*``) to it (issue 42, Required 1)."""


def package_of(module: str) -> str:
    """The top-level package a module belongs to; the top-level modules
    (``ratchet._exit``, ``ratchet.plugin``) form the package ``ratchet``."""
    parts = module.split(".")
    if len(parts) > 1 and (RATCHET / parts[1]).is_dir():
        return parts[1]
    return "ratchet"


def is_private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split(".")[1:])


def private_imports(graph: grimp.ImportGraph, importers: tuple[str, ...]) -> list[str]:
    """Each import, by a module of ``importers``, of another package's private module."""
    found = []
    for importer in sorted(graph.modules):
        if package_of(importer) not in importers:
            continue
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            if (
                not imported.startswith("ratchet.")
                or package_of(imported) == package_of(importer)
                or not is_private(imported)
                or imported in DATA_TYPES
                or imported.startswith("ratchet.wire._")
            ):
                continue
            found += [
                f"{importer} line {d['line_number']}: {d['line_contents']}"
                for d in graph.get_import_details(importer=importer, imported=imported)
            ]
    return found


def test_the_product_ring_imports_only_public_names_of_other_packages():
    """Imports under ``TYPE_CHECKING`` and inside functions count too: what the CLI
    or the web server borrows from the core is public API, or moves to its one user."""
    graph = grimp.build_graph("ratchet", cache_dir=None)
    assert len(graph.modules) > 100  # the walk found the package
    found = private_imports(graph, PRODUCT_RING)
    assert not found, "import these from their package's __init__:\n" + "\n".join(found)


def test_a_private_import_is_one_of_another_packages_underscore_module():
    graph = grimp.ImportGraph()
    for module in (
        "ratchet.cli._run",
        "ratchet.cli._common",
        "ratchet.client",
        "ratchet.client._listing",
        "ratchet._exit",
        "ratchet.agents._messages",
    ):
        graph.add_module(module)
    for imported, line in (
        ("ratchet.cli._common", 3),
        ("ratchet.client", 4),
        ("ratchet.client._listing", 5),
        ("ratchet._exit", 6),
        ("ratchet.agents._messages", 7),
    ):
        graph.add_import(
            importer="ratchet.cli._run",
            imported=imported,
            line_number=line,
            line_contents=f"import {imported}",
        )
    assert private_imports(graph, ("cli",)) == [
        "ratchet.cli._run line 6: import ratchet._exit",
        "ratchet.cli._run line 5: import ratchet.client._listing",
    ]
