"""The docs and the README show only code that runs: every Python block in docs/ is an
include of a file under examples/ (which tests/cli/test_examples.py runs), the README's
agent is examples/quickstart.py, and every example is shown somewhere. Every Ratchet
name the docs tell users to import or build is importable from a public package."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
import unicodedata
from pathlib import Path

import pytest

from .conftest import ROOT

DOCS = ROOT / "docs"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
INCLUDE = re.compile(r'^--8<-- "([^"]+)"$')


def blocks(text: str) -> list[tuple[str, str]]:
    return [(lang, body) for lang, body in FENCE.findall(text)]


def pages() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text() for p in sorted(DOCS.rglob("*.md"))}


def test_every_python_block_in_the_docs_is_an_example_file():
    written = [
        (page, body.splitlines()[0] if body else "")
        for page, text in pages().items()
        for lang, body in blocks(text)
        if lang in ("python", "py", "toml") and not INCLUDE.match(body.strip())
    ]
    assert not written, f"put these in examples/ and include them with --8<--: {written}"


def test_every_included_file_exists_and_every_example_is_shown():
    included = {
        INCLUDE.match(body.strip()).group(1)  # type: ignore[union-attr]
        for text in pages().values()
        for _, body in blocks(text)
        if INCLUDE.match(body.strip())
    }
    assert all((ROOT / path).is_file() for path in included), included
    examples = {
        str(p.relative_to(ROOT))
        for p in (ROOT / "examples").rglob("*")
        if p.suffix in (".py", ".toml") and "__pycache__" not in p.parts
    }
    assert examples - included == set(), "examples no page shows"


def test_the_readme_is_short_and_its_agent_is_the_quickstart_example():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    [agent] = [body for lang, body in blocks(readme) if lang == "python"]
    assert agent in (ROOT / "examples" / "quickstart.py").read_text()


def test_the_readme_links_to_pages_that_exist():
    readme = (ROOT / "README.md").read_text()
    for target in re.findall(r"\]\(((?:docs|bench)/[^)#]+)", readme):
        assert (ROOT / target).exists(), target


def slug(heading: str) -> str:
    """A heading's anchor as mkdocs' toc makes it (markdown's ``slugify``)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", re.sub(r"[`*]|<[^>]+>", "", heading))
    text = re.sub(r"[^\w\s-]", "", unicodedata.normalize("NFKD", text)).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    """The anchors a page's headings make (a repeated heading's get ``_1``, ``_2``)."""
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} +(.+?)\s*$", FENCE.sub("", page.read_text()), re.M):
        base = slug(heading)
        anchor, n = base, 0
        while anchor in found:
            n += 1
            anchor = f"{base}_{n}"
        found.add(anchor)
    return found


def test_every_link_to_a_section_finds_its_heading():
    """mkdocs build --strict fails on a missing anchor only with validation.anchors
    at warn (its default is info): checked here too, without building the site."""
    broken = []
    for path in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        text = re.sub(r"`[^`\n]*`", "", FENCE.sub("", path.read_text()))
        for target, anchor in re.findall(r"\]\(([^)\s#:]*)#([^)\s]+)\)", text):
            page = (path.parent / target) if target else path
            if page.suffix == ".md" and page.is_file() and anchor not in anchors(page):
                broken.append(f"{path.relative_to(ROOT)}: {target}#{anchor}")
    assert not broken, f"links to headings that do not exist: {broken}"


DOTTED = re.compile(r"\bratchet(?:\.[a-z]\w*)*\.\w+")
CONSTRUCTED = re.compile(r"(?<![\w.])([A-Z]\w*)\(")
"""A class called in the docs' inline code (``SummarizingAgent(model)``)."""


def public_packages() -> list[str]:
    """``ratchet``, the packages docs/reference/index.md lists as public and their
    public subpackages (``ratchet.agents.models``)."""
    table = (DOCS / "reference" / "index.md").read_text()
    listed = re.findall(r"`(ratchet\.\w+)`", table.split("Each package")[0])
    found = ["ratchet", *listed]
    for package in listed:
        module = importlib.import_module(package)
        found += [
            info.name
            for info in pkgutil.iter_modules(getattr(module, "__path__", []), f"{package}.")
            if info.ispkg and not info.name.rpartition(".")[2].startswith("_")
        ]
    return found


def inline_code(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", FENCE.sub("", text))


@pytest.mark.parametrize("page", sorted(pages()))
def test_every_ratchet_name_a_page_spells_out_imports(page: str):
    """``ratchet.agents.SummarizingAgent`` in prose or ``::: ratchet.x.Name`` in the
    reference names something a user can import (names of other things, such as the
    ``ratchet.thread`` query, are not modules' attributes and are left alone)."""
    missing = []
    for dotted in set(DOTTED.findall(pages()[page])):
        module, _, name = dotted.rpartition(".")
        if module == "ratchet" or module.split(".")[1].startswith("_"):
            continue  # the query, signal and memo names; private modules: test_architecture
        try:
            imported = importlib.import_module(module)
        except ImportError:
            continue  # an attribute's path (``ratchet.usage.cost_usd``), not a module
        if not hasattr(imported, name) and importlib.util.find_spec(dotted) is None:
            missing.append(dotted)  # neither an attribute nor a module (``.examples.x``)
    assert not missing, f"{page} names what does not import: {sorted(missing)}"


def test_every_ratchet_class_the_docs_construct_is_exported():
    """A class the docs show being built (``ThreadCache(max_bytes=...)``) is in a public
    package's ``__all__``, so a user can import it without reaching into ``_modules``."""
    defined = {
        name
        for path in (ROOT / "ratchet").rglob("*.py")
        for name in re.findall(r"^class (\w+)", path.read_text(), re.M)
    }
    exported = {
        name
        for package in public_packages()
        for name in getattr(importlib.import_module(package), "__all__", [])
    }
    unexported = sorted(
        f"{page}: {name}"
        for page, text in pages().items()
        for span in inline_code(text)
        for name in CONSTRUCTED.findall(span)
        if name in defined and name not in exported
    )
    assert not unexported, f"export these or stop telling users to build them: {unexported}"
