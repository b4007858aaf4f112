"""An evaluation's report: per case the old (recorded) and new answers side by side with
their scores, tokens, cost and latency; the aggregates; and a gate on them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from statistics import mean

from pydantic import BaseModel, ValidationError

from ratchet.errors import InvalidInputError

from ._cases import Case, CaseScore, Outcome, Score
from ._evaluators import Evaluator, score_case


class Compared(BaseModel):
    """One case, as recorded and as the changed agent answered it."""

    case: Case
    old: Outcome
    new: Outcome
    old_score: CaseScore
    new_score: CaseScore


async def scored(
    case: Case, old: Outcome, new: Outcome, evaluators: Sequence[Evaluator]
) -> Compared:
    """``case``'s two outcomes, scored by the same evaluators."""
    return Compared(
        case=case,
        old=old,
        new=new,
        old_score=await score_case(case, old, evaluators),
        new_score=await score_case(case, new, evaluators),
    )


class Report(BaseModel):
    """Every case compared, and what they add up to."""

    agent: str
    cases: list[Compared]
    notes: list[str] = []
    """What a reader must know to trust the figures (a rerun: what it could not intercept)."""

    @property
    def old_score(self) -> float:
        return mean(c.old_score.value for c in self.cases) if self.cases else 0.0

    @property
    def new_score(self) -> float:
        return mean(c.new_score.value for c in self.cases) if self.cases else 0.0

    @property
    def old_cost(self) -> float:
        return sum(c.old.usage.cost_usd for c in self.cases)

    @property
    def new_cost(self) -> float:
        return sum(c.new.usage.cost_usd for c in self.cases)

    def gate(
        self, *, min_score: float | None = None, max_cost_increase: float | None = None
    ) -> list[str]:
        """What fails the gate (empty: it passes). ``max_cost_increase`` is a fraction
        (0.1: at most 10% more than the recorded runs cost)."""
        failures: list[str] = []
        if min_score is not None and self.new_score < min_score:
            failures.append(f"score {self.new_score:.3f} is below the minimum {min_score:.3f}")
        failed = [c for c in self.cases if c.new.error is not None]
        if failed and (min_score is not None or max_cost_increase is not None):
            failures.append(
                f"{len(failed)} of {len(self.cases)} cases did not run to an answer "
                f"(first: {failed[0].case.id}: {failed[0].new.error})"
            )
        if max_cost_increase is not None and self.old_cost == 0 < self.new_cost:
            failures.append(
                "the old side has no cost to compare with (its model had no price, so its "
                "turns recorded none): drop the cost "
                "limit, or compare two priced agents"
            )
        elif max_cost_increase is not None and self.old_cost > 0:
            increase = self.new_cost / self.old_cost - 1
            if increase > max_cost_increase:
                failures.append(
                    f"cost rose {increase:.1%} ({_usd(self.old_cost)} -> {_usd(self.new_cost)}), "
                    f"more than the {max_cost_increase:.0%} allowed"
                )
        return failures

    def to_markdown(self) -> str:
        lines = [
            f"# Evaluation of `{self.agent}`",
            "",
            f"{len(self.cases)} cases · score {self.old_score:.3f} → {self.new_score:.3f} · "
            f"cost {_usd(self.old_cost)} → {_usd(self.new_cost)}",
            "",
            *(f"> {note}\n" for note in self.notes),
            "| case | old answer | new answer | old | new | tokens old → new | cost old → new |",
            "|---|---|---|---|---|---|---|",
        ]
        for c in self.cases:
            lines.append(
                f"| {c.case.id} | {_cell(c.old.answer)} | {_cell(c.new.answer)} "
                f"| {c.old_score.value:.2f} | {c.new_score.value:.2f} "
                f"| {c.old.usage.total_tokens} → {c.new.usage.total_tokens} "
                f"| {_usd(c.old.usage.cost_usd)} → {_usd(c.new.usage.cost_usd)} |"
            )
        live = [c for c in self.cases if c.new.live_calls]
        if live:
            lines += ["", "## Calls that ran live", ""]
            lines += [f"- {c.case.id}: {', '.join(c.new.live_calls)}" for c in live]
        why = [
            f"- {c.case.id} · {name}: {_was(c.old_score.scores.get(name))} → "
            f"{score.value:.2f} ({score.reason})"
            for c in self.cases
            for name, score in c.new_score.scores.items()
        ]
        if why:  # no evaluators: nothing scored, nothing to say why
            lines += ["", "## Why", "", *why]
        return "\n".join(lines) + "\n"

    def to_html(self) -> str:
        """One self-contained page: summary, plots of score and cost per case, the table."""
        from ._html import render

        return render(self)

    def write(self, directory: str | Path) -> list[Path]:
        """``report.md``, ``report.html`` and ``report.json`` in ``directory``; their paths."""
        root = Path(directory)
        root.mkdir(parents=True, exist_ok=True)
        markdown, page, data = root / "report.md", root / "report.html", root / "report.json"
        markdown.write_text(self.to_markdown())
        page.write_text(self.to_html())
        summary = {
            "agent": self.agent,
            "old_score": self.old_score,
            "new_score": self.new_score,
            "old_cost_usd": self.old_cost,
            "new_cost_usd": self.new_cost,
            "notes": self.notes,
            "cases": [c.model_dump(mode="json") for c in self.cases],
        }
        data.write_text(json.dumps(summary, indent=1))
        return [markdown, page, data]


def assert_gate(
    report: Report, *, min_score: float | None = None, max_cost_increase: float | None = None
) -> None:
    """For a test suite: raise ``AssertionError`` listing what fails the gate."""
    failures = report.gate(min_score=min_score, max_cost_increase=max_cost_increase)
    if failures:
        raise AssertionError(f"{report.agent} fails the gate: " + "; ".join(failures))


def read_input(path: str | Path, kind: str, written_by: str) -> str:
    """The text of the ``kind`` (e.g. "cases file") at ``path``, or an error saying why
    it cannot be read (``written_by`` says what the file should be, for a directory)."""
    try:
        return Path(path).read_text()
    except FileNotFoundError:
        raise InvalidInputError(f"There is no {kind} {path}.") from None
    except IsADirectoryError:
        raise InvalidInputError(
            f"{path} is a directory: give the {kind} in it ({written_by})."
        ) from None
    except OSError as e:
        raise InvalidInputError(f"Cannot read the {kind} {path}: {e.strerror}.") from None


def load_cases(path: str | Path) -> list[Case]:
    """Cases from a JSON file: a list of ``{"id", "prompt", "expected"?, "weights"?}``
    (an ``id`` may be left out: the position is used)."""
    text = read_input(path, "cases file", "a JSON list of cases")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidInputError(f"{path} is not JSON: {e}.") from None
    if isinstance(raw, dict) and "snapshots" in raw:
        raise InvalidInputError(
            f"{path} is a dataset of recorded sessions (`ratchet eval export`), not a list of "
            f"cases: rerun it with `ratchet eval rerun --dataset {path} --agent NAME`."
        )
    if not isinstance(raw, list):
        raise InvalidInputError(f"{path} must hold a JSON list of cases, each with a 'prompt'.")
    cases: list[Case] = []
    for i, item in enumerate(raw, 1):
        if not isinstance(item, dict) or "prompt" not in item:
            raise InvalidInputError(f"Case {i} in {path} needs a 'prompt': {item!r:.80}")
        try:
            cases.append(Case.model_validate({"id": f"case-{i}", **item}))
        except ValidationError as e:
            where = ".".join(map(str, e.errors()[0]["loc"]))
            raise InvalidInputError(
                f"Case {i} in {path}: {e.errors()[0]['msg']} at {where}."
            ) from None
    return cases


def _usd(value: float) -> str:
    return f"${value:.4f}" if value >= 0.01 or value == 0 else f"${value:.6f}"


def _cell(text: str | None, limit: int = 80) -> str:
    flat = (text or "").replace("\n", " ").replace("|", "\\|")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _was(old: Score | None) -> str:
    return f"{old.value:.2f}" if old is not None else "-"
