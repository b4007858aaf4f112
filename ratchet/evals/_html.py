"""A report as one self-contained HTML file: the summary, a plot of score and cost per
case (inline SVG, no scripts), and the side-by-side table."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._report import Report

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; width: 100%; }
.note { background: #fff4db; border-left: 3px solid #e5b64a; padding: 4px 8px; }
th, td { border: 1px solid #ddd; padding: 4px 8px; vertical-align: top; text-align: left; }
th { background: #f4f4f4; } td.n { text-align: right; white-space: nowrap; }
.worse { background: #fde8e8; } .better { background: #e6f6e6; }
svg text { font-size: 11px; }
"""
OLD, NEW = "#9aa5b1", "#2f6fdb"


def render(report: Report) -> str:
    rows = "\n".join(_row(c) for c in report.cases)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>Evaluation of {escape(report.agent)}</title><style>{STYLE}</style></head>
<body>
<h1>Evaluation of <code>{escape(report.agent)}</code></h1>
<p>{len(report.cases)} cases · score {report.old_score:.3f} → <b>{report.new_score:.3f}</b>
· cost ${report.old_cost:.6f} → <b>${report.new_cost:.6f}</b></p>
{"".join(f"<p class=note>{escape(note)}</p>" for note in report.notes)}
<h2>Score per case</h2>
{_bars(report, "score")}
<h2>Cost per case (USD)</h2>
{_bars(report, "cost")}
<h2>Cases</h2>
<table>
<tr><th>case</th><th>prompt</th><th>old answer</th><th>new answer</th><th>old</th>
<th>new</th><th>new tool calls</th><th>tokens old → new</th><th>why (new)</th></tr>
{rows}
</table>
</body></html>
"""


def _row(c) -> str:  # noqa: ANN001 - a report.Compared
    change = c.new_score.value - c.old_score.value
    mood = "better" if change > 0 else "worse" if change < 0 else ""
    calls = ", ".join(call.describe() for call in c.new.tool_calls)
    live = f" (live: {', '.join(c.new.live_calls)})" if c.new.live_calls else ""
    why = "<br>".join(
        f"{escape(name)}: {s.value:.2f} {escape(s.reason)}"
        for name, s in c.new_score.scores.items()
    )
    answer = escape(c.new.answer or "") if c.new.error is None else f"error: {escape(c.new.error)}"
    return (
        f'<tr class="{mood}"><td>{escape(c.case.id)}</td><td>{escape(c.case.prompt)}</td>'
        f"<td>{escape(c.old.answer or '')}</td><td>{answer}</td>"
        f'<td class="n">{c.old_score.value:.2f}</td><td class="n">{c.new_score.value:.2f}</td>'
        f"<td>{escape(calls + live)}</td>"
        f'<td class="n">{c.old.usage.total_tokens} → {c.new.usage.total_tokens}</td>'
        f"<td>{why}</td></tr>"
    )


def _bars(report: Report, what: str) -> str:
    """Old and new side by side for each case, as an SVG bar chart."""
    pairs = [
        (c.old_score.value, c.new_score.value)
        if what == "score"
        else (c.old.usage.cost_usd, c.new.usage.cost_usd)
        for c in report.cases
    ]
    top = max([1e-12, *(v for pair in pairs for v in pair)])
    width, height, slot = max(240, 40 * len(pairs) + 60), 180, 40
    bars: list[str] = []
    for i, (old, new) in enumerate(pairs):
        x = 40 + i * slot
        for dx, value, colour in ((4, old, OLD), (18, new, NEW)):
            h = 120 * value / top
            bars.append(
                f'<rect x="{x + dx}" y="{130 - h:.1f}" width="12" height="{h:.1f}" '
                f'fill="{colour}"><title>{value:g}</title></rect>'
            )
        bars.append(f'<text x="{x + 6}" y="146">{i + 1}</text>')
    legend = (  # a row of its own above the plot
        f'<rect x="40" y="2" width="10" height="10" fill="{OLD}"/>'
        '<text x="54" y="11">old</text>'
        f'<rect x="90" y="2" width="10" height="10" fill="{NEW}"/>'
        '<text x="104" y="11">new</text>'
    )
    axis = f'<text x="4" y="14">{top:g}</text><text x="4" y="130">0</text>'
    return (
        f'<svg role="img" aria-label="{what} per case" width="{width}" height="{height}" '
        f'xmlns="http://www.w3.org/2000/svg">{legend}'
        f'<g transform="translate(0,24)">{axis}{"".join(bars)}</g></svg>'
    )
