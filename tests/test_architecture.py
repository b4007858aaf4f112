"""The shape of the code, checked from its source: no module importing itself
through others; in the workflow package, small classes and no part of the agent
loop holding the loop itself."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import grimp

import ratchet.workflows

WORKFLOWS = Path(ratchet.workflows.__file__).parent
MAX_LINES = 250
MAX_ATTRIBUTES = 8
HOSTS_OF_THE_RUNNER = {
    "_agent_run.py",
    "_session.py",
    "_session_runs.py",
    "_runner.py",
    "__init__.py",
}
"""The workflows that keep an AgentRunner (and the runner's own module)."""


def _classes() -> list[tuple[str, ast.ClassDef]]:
    found = []
    for path in sorted(WORKFLOWS.glob("*.py")):
        tree = ast.parse(path.read_text())
        found += [(path.name, n) for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    return found


def _instance_attributes(cls: ast.ClassDef) -> set[str]:
    """``self.x = ...`` anywhere in the class's methods, and dataclass-style fields."""
    names = {
        n.target.id
        for n in cls.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }
    for node in ast.walk(cls):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        for target in targets:
            elements = target.elts if isinstance(target, ast.Tuple) else [target]
            for t in elements:
                if (
                    isinstance(t, ast.Attribute)
                    and isinstance(t.value, ast.Name)
                    and t.value.id == "self"
                ):
                    names.add(t.attr)
    return names


def test_no_workflow_class_is_over_250_lines_or_8_instance_attributes():
    classes = _classes()
    assert len(classes) > 20  # the walk found the package
    too_big = [
        f"{file}:{cls.name} ({cls.end_lineno - cls.lineno + 1} lines, "  # type: ignore[operator]
        f"{len(attrs)} attributes: {', '.join(sorted(attrs))})"
        for file, cls in classes
        if (cls.end_lineno - cls.lineno + 1 > MAX_LINES)  # type: ignore[operator]
        or len(attrs := _instance_attributes(cls)) > MAX_ATTRIBUTES
    ]
    assert not too_big, "split these classes by responsibility:\n" + "\n".join(too_big)


def test_only_the_workflows_that_host_a_runner_import_it():
    """The runner's parts (ledger, turns, pending work, sub-agents, compaction,
    state) get values and hooks, never the runner."""
    importers = []
    for path in sorted(WORKFLOWS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("runner"):
                importers.append(path.name)
    assert importers, "the walk found no import of the runner at all"
    assert set(importers) <= HOSTS_OF_THE_RUNNER, importers


def test_the_attribute_counter_counts_what_a_class_keeps():
    cls = ast.parse(
        "class C:\n"
        "    x: int = 0\n"
        "    def __init__(self):\n"
        "        self.a = 1\n"
        "        self.b: int = 2\n"
        "        self.c, self.d = 3, 4\n"
        "        self.a += 1\n"
        "        local = 5\n"
    ).body[0]
    assert isinstance(cls, ast.ClassDef)
    assert _instance_attributes(cls) == {"x", "a", "b", "c", "d"}


RATCHET = WORKFLOWS.parent
TURN_PATH = [
    "client/_client.py",
    "client/_session_handle.py",
    "client/_thread_reader.py",
    "wire/_run_data.py",
    "wire/_turn_data.py",
    *(
        f"workflows/_{name}.py"
        for name in (
            "agent_run",
            "session",
            "sends",
            "session_runs",
            "runner",
            "turn_scheduling",
            "pending_calls",
            "observe",
            "ledger",
            "marks",
            "thread_query",
            "log_index",
        )
    ),
    *(
        f"activities/_{name}.py"
        for name in (
            "turn",
            "attempt",
            "prompt",
            "prompt_fit",
            "turn_result",
            "log_cache",
            "thread_log",
            "heartbeats",
        )
    ),
    *(f"history/_{name}.py" for name in ("log_pages", "log_events", "log_segments")),
    "agents/_tool_calling.py",
    "agents/_interceptors.py",
    *(f"agents/models/{p.name}" for p in sorted((RATCHET / "agents/models").glob("*.py"))),
]
"""The modules a prompt crosses from ``AgentClient.run`` / ``SessionHandle.send`` to
the model and back (docs/how-it-works.md draws the path)."""
MAX_FUNCTION_LINES = 60
MAX_COMPLEXITY = 15


def _functions(path: Path) -> list[tuple[str, int, int]]:
    """Every function and method of ``path`` (nested ones too): name, lines, and
    cyclomatic complexity as radon counts it."""
    from radon.complexity import cc_visit
    from radon.visitors import Class, Function

    found: list[tuple[str, int, int]] = []

    def visit(block: Function | Class, prefix: str = "") -> None:
        if isinstance(block, Class):
            return  # its methods are blocks of their own
        name = f"{prefix}{block.classname + '.' if block.classname else ''}{block.name}"
        found.append((name, block.endline - block.lineno + 1, block.complexity))
        for closure in block.closures:
            visit(closure, f"{name}.")

    for block in cc_visit(path.read_text()):
        visit(block)
    return found


def test_no_function_on_the_turn_path_is_over_60_lines_or_complexity_15():
    """A newcomer reads the path from send to the model and back as a short story:
    functions of a screen or less, each with few branches (radon counts them)."""
    assert all((RATCHET / p).exists() for p in TURN_PATH), "a module of the path moved"
    too_big = [
        f"{path}:{name} ({lines} lines, complexity {complexity})"
        for path in TURN_PATH
        for name, lines, complexity in _functions(RATCHET / path)
        if lines > MAX_FUNCTION_LINES or complexity > MAX_COMPLEXITY
    ]
    assert not too_big, "split these into clear functions:\n" + "\n".join(too_big)


def test_the_function_measure_counts_lines_and_branches():
    source = "def f(x):\n" + "".join(f"    if x == {i}:\n        return {i}\n" for i in range(16))
    path = Path(__file__).parent / "_measure_probe.py"
    path.write_text(source)
    try:
        assert _functions(path) == [("f", 33, 17)]
    finally:
        path.unlink()


def _import_cycles(graph: grimp.ImportGraph) -> list[tuple[str, ...]]:
    """One shortest cycle through each import that is part of one, as the modules
    in order (the first again at the end); each set of modules once."""
    cycles: dict[frozenset[str], tuple[str, ...]] = {}
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back is not None:
                cycles.setdefault(frozenset(back), (module, *back))
    return list(cycles.values())


def _import_lines(graph: grimp.ImportGraph, cycle: tuple[str, ...]) -> list[str]:
    return [
        f"  {importer} -> {imported}  line {d['line_number']}: {d['line_contents']}"
        for importer, imported in zip(cycle, cycle[1:], strict=False)
        for d in graph.get_import_details(importer=importer, imported=imported)
    ]


def test_no_module_imports_itself_through_others():
    """A cycle makes import order matter (a name read before its module has run is
    missing) and ties the modules on it into one that cannot be read or changed
    alone; imports inside functions count, annotation-only ones do not."""
    graph = grimp.build_graph("ratchet", exclude_type_checking_imports=True, cache_dir=None)
    assert len(graph.modules) > 100  # the walk found the package
    cycles = _import_cycles(graph)
    report = ["\n".join([" -> ".join(cycle), *_import_lines(graph, cycle)]) for cycle in cycles]
    assert not cycles, "modules that import themselves through others:\n" + "\n".join(report)


def test_the_cycle_finder_finds_a_cycle_and_its_import_lines():
    graph = grimp.ImportGraph()
    for module in ("pkg", "pkg.a", "pkg.b", "pkg.c"):
        graph.add_module(module)
    graph.add_import(importer="pkg.a", imported="pkg.b", line_number=3, line_contents="import b")
    graph.add_import(importer="pkg.b", imported="pkg.a", line_number=7, line_contents="import a")
    graph.add_import(importer="pkg.b", imported="pkg.c", line_number=8, line_contents="import c")
    assert _import_cycles(graph) == [("pkg.a", "pkg.b", "pkg.a")]
    assert _import_lines(graph, ("pkg.a", "pkg.b", "pkg.a")) == [
        "  pkg.a -> pkg.b  line 3: import b",
        "  pkg.b -> pkg.a  line 7: import a",
    ]


def test_a_modules_name_tells_its_layer_no_basename_repeats_outside_the_cli():
    """``sessions.py`` in three packages made a newcomer guess which layer they were
    in. The CLI's modules are named after their commands, so only they may repeat."""
    names = [
        path.name
        for path in RATCHET.rglob("*.py")
        if "cli" not in path.relative_to(RATCHET).parts[:1]
        and path.name not in ("__init__.py", "__main__.py")
    ]
    assert sorted({n for n in names if names.count(n) > 1}) == []


PUBLIC_MODULES = {
    "errors.py": "the error tree users catch",
    "devserver.py": "a dev server for scripts and notebooks",
    "plugin.py": "the temporalio plugins",
    "telemetry.py": "tracing and metrics exporters (the otel extra)",
    "process.py": "how a process ends (run_main, hard_exit) and a worker's grace period",
    "agents/mcp_tools.py": "MCP toolsets (the mcp extra, imported only by who uses it)",
    "examples/orchestration.py": "an example workflow, to read",
    "types/views.py": "the functions of a thread log's view (ratchet.types.Span, View)",
}
"""The modules without a leading underscore besides packages' ``__init__`` and
``__main__``: everything else is internal, and a package's ``__all__`` is its surface."""


def test_internal_modules_are_private_and_docs_import_only_public_names():
    public = sorted(
        str(path.relative_to(RATCHET))
        for path in RATCHET.rglob("*.py")
        if not path.name.startswith("_")
    )
    assert public == sorted(PUBLIC_MODULES)
    root = RATCHET.parent
    shown = [*root.glob("docs/**/*.md"), root / "README.md", *root.glob("examples/**/*.py")]
    private = [
        f"{path.relative_to(root)}: {name}"
        for path in shown
        for name in re.findall(r"ratchet(?:\.\w+)*\._[a-z]\w*", path.read_text())
    ]
    assert not private, "import these from their package (add them to its __all__)"
