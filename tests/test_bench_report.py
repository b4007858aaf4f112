"""bench/README.md's measured figures are the committed results, rendered by bench/report.py:
no figure between its markers is typed by hand or left behind by a re-run benchmark."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from bench import report


def copy_of_the_results(tmp_path: Path) -> tuple[Path, Path]:
    results, readme = tmp_path / "results", tmp_path / "README.md"
    results.mkdir()
    for path in report.RESULTS.glob("*.json"):
        shutil.copy(path, results)
    shutil.copy(report.README, readme)
    return results, readme


def test_the_bench_readme_figures_are_the_committed_results():
    stale = report.stale_sections()
    assert not stale, (
        f"bench/README.md's figures differ from bench/results/ ({', '.join(stale)}): "
        "run `python -m bench.report`"
    )


def test_a_changed_result_makes_the_check_fail_and_only_its_section_is_rewritten(
    tmp_path: Path,
):
    results, readme = copy_of_the_results(tmp_path)
    latency = json.loads((results / "start_latency.json").read_text())
    latency["ratio"] = 9.87
    (results / "start_latency.json").write_text(json.dumps(latency))
    before = readme.read_text()

    assert report.stale_sections(results, readme) == ["start_latency"]
    assert readme.read_text() == before, "the check rewrote the README"

    assert report.write(results, readme) == ["start_latency"]
    after = readme.read_text()
    assert "9.87×" in after
    assert report.stale_sections(results, readme) == []
    assert report.BLOCK.sub("", after) == report.BLOCK.sub("", before), "prose changed"


def test_a_results_file_without_a_section_or_markers_fails_the_check(tmp_path: Path):
    results, readme = copy_of_the_results(tmp_path)
    (results / "new_benchmark.json").write_text("{}")
    readme.write_text(readme.read_text().replace("<!-- --8<-- [end:overload] -->", ""))

    stale = report.stale_sections(results, readme)

    assert "results/new_benchmark.json (no renderer)" in stale
    assert any(s.startswith("overload (no ") for s in stale)
