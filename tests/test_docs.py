"""The docs and the README show only code that runs: every Python block in docs/ is an
include of a file under examples/ (which tests/cli/test_examples.py runs), the README's
agent is examples/quickstart.py, and every example is shown somewhere."""

from __future__ import annotations

import re

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
