"""The leaderboard at a glance: the page the report opens on (results/report/leaderboard.html).

leaderboard.md holds every cell as "value [lower, upper] (n)" and a ``source`` column with each
suite's coverage, ~3,000 px wide.  This page is written for a screen of 1,400 px: per suite one
table whose first columns are the scores (the value large, the interval and n small beneath it),
then the rank and a short source ("model", or "file" with a footnote number carrying the
coverage), and one forest plot per suite of its headline score (each system's value with its
interval; a cell without an interval a bare point, a judge-failure-free n in the label).  Plain
HTML with inline SVG: no script, no external file, so it opens from disk and inside Snakemake's
report (report/workflow.rst includes it on the first page).
"""

from __future__ import annotations

import html
import io
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from isqaflow.report.figures import new_figure

# A value built on a judge or metric that fails its known-answer controls: kept, not hidden
NOT_DECISIVE = "not decisive"
# The leaderboard's marks, kept beside the interval: SELF, small n, zero width, prior-set, and
# not decisive
MARKS = ("SELF", "\u2021", "\u00a7", "\u00b6", NOT_DECISIVE)
STYLE = (
    # inside Snakemake's report the page is the first page's description, a column 32rem wide
    # beside the rule graph: widen it and put the graph below
    "div.prose.max-w-lg:has(.isqa-front){max-width:1400px}"
    "div.flex:has(> div > div.prose .isqa-front){flex-wrap:wrap}"
    ".isqa-front{font-family:system-ui,sans-serif;color:#111;max-width:1380px}"
    ".isqa-front h2{font-size:1.1em;margin:1em 0 .3em}"
    ".isqa-front .suite{display:flex;gap:1em;align-items:flex-start;flex-wrap:wrap}"
    ".isqa-front table{border-collapse:collapse;font-size:.8em}"
    ".isqa-front th,.isqa-front td{border-bottom:1px solid #ddd;padding:.15em .45em;"
    "text-align:right;vertical-align:top}"
    ".isqa-front th{background:#f4f4f4;font-weight:600;max-width:7em;white-space:normal;"
    "font-size:.9em}"
    ".isqa-front td.name{text-align:left;white-space:nowrap;font-weight:600}"
    ".isqa-front .v{font-size:1.05em;white-space:nowrap}"
    ".isqa-front .ci{display:block;color:#555;font-size:.8em;white-space:nowrap}"
    ".isqa-front .notes{font-size:.8em;max-width:1300px;color:#333}"
    ".isqa-front svg{max-width:520px;height:auto}"
    ".isqa-front .warn{color:#b00000;font-weight:600;font-size:.85em;max-width:1300px}"
)


def _number(value: Any, digits: int) -> str:
    return "--" if value is None or pd.isna(value) else f"{float(value):.{digits}f}"


def score_cell(row: Mapping[str, Any] | None, text: str, digits: int = 1) -> str:
    """A score: the value large, "[lower, upper] n=N" and the cell's marks (SELF, ...) small."""
    if row is None or pd.isna(row.get("value")):  # a cell of text: "reference", "not identified"
        return f"<td>{html.escape(text)}</td>" if text else "<td></td>"
    # not decisive on a line of its own beneath: beside the value it would widen the column
    marks = " ".join(m for m in MARKS if m in text and m != NOT_DECISIVE)
    interval = ""
    if not pd.isna(row.get("lower", np.nan)) and not pd.isna(row.get("upper", np.nan)):
        interval = f"[{_number(row['lower'], digits)}, {_number(row['upper'], digits)}] "
    n = "" if pd.isna(row.get("n", np.nan)) else f"n={int(row['n'])}"
    value = _number(row["value"], digits) + (f" {marks}" if marks else "")
    return (
        f'<td><span class="v">{html.escape(value)}</span>'
        f'<span class="ci">{html.escape(interval.strip())}</span>'
        f'<span class="ci">{html.escape(n)}</span>'
        + (f'<span class="ci warn">{NOT_DECISIVE}</span>' if NOT_DECISIVE in text else "")
        + "</td>"
    )


def forest_svg(title: str, points: Sequence[tuple[str, float, float, float]]) -> str:
    """One forest plot as inline SVG: (system, value, lower, upper) per row, top to bottom."""
    import matplotlib.pyplot as plt

    # new_figure fixes the SVG ids' salt: an unchanged plot, an unchanged page (with a random
    # salt every run rewrote at_a_glance.html's ids)
    fig, (ax,) = new_figure(width=5.2, height=0.6 + 0.32 * len(points))
    ys = np.arange(len(points))[::-1]
    for y, (_, value, lower, upper) in zip(ys, points, strict=True):
        if not (np.isnan(lower) or np.isnan(upper)):
            ax.plot([lower, upper], [y, y], color="#4a6fa5", lw=2)
        ax.plot([value], [y], "o", color="#1f3b63", ms=5)
    ax.set_yticks(ys, [name for name, *_ in points], fontsize=8)
    ax.set_title(title, fontsize=9, loc="left")
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="x", color="#eee")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    out = io.StringIO()
    fig.savefig(out, format="svg", metadata={"Date": None})  # no date: the same page each run
    plt.close(fig)
    text = out.getvalue()
    return text[text.index("<svg") :]


def front_page(
    sections: Sequence[tuple[str, Sequence[str], Sequence[str]]],
    numbers: pd.DataFrame,
    cells: Mapping[str, Mapping[str, str]],
    ranks: Mapping[str, pd.Series],
    coverage: Mapping[str, str],
    footnotes: Sequence[str],
    controls: str,
    warnings: Mapping[str, str] | None = None,
    sources: Mapping[str, str] | None = None,
) -> str:
    """The page: ``sections`` (title, its columns, its systems in rank order); ``numbers`` the
    leaderboard's long table (system, column, value, lower, upper, n); ``cells`` its text cells
    (system -> column -> text: the marks); ``ranks`` "rank <column>" -> system -> its rank as
    shown ("r of N"); ``coverage``: a file-based system's coverage note (its footnote), by system;
    ``warnings``: suite -> the sentence saying its judge or metric cannot rank these systems
    (first under the suite's title, and on its plot); ``sources``: the short source of a system
    no file brought ("model", a reference's or baseline's note, released judgments: default
    "model").  Each suite's plot shows its headline score, its first column."""
    warnings = warnings or {}
    sources = sources or {}
    by_cell = {(r["system"], r["column"]): r for r in numbers.to_dict("records")}
    notes: list[str] = []
    parts = [f"<style>{STYLE}</style>", '<div class="isqa-front">']
    parts.append(f'<p class="notes">{html.escape(controls)}</p>')
    for title, columns, systems in sections:
        ranked = [c for c in ranks if c.removeprefix("rank ") in columns]
        head = "".join(f"<th>{html.escape(c)}</th>" for c in [*columns, *ranked, "source"])
        rows = []
        for system in systems:
            tds = []
            for column in columns:
                digits = 0 if column.startswith(("Bradley-Terry", "Elo")) else 1
                text = cells.get(system, {}).get(column, "")
                tds.append(score_cell(by_cell.get((system, column)), text, digits))
            tds += [f"<td>{html.escape(str(ranks[c].get(system, '')))}</td>" for c in ranked]
            if system in coverage:
                if coverage[system] not in notes:
                    notes.append(coverage[system])
                source = f"file<sup>{notes.index(coverage[system]) + 1}</sup>"
            else:
                source = html.escape(sources.get(system, "model"))
            rows.append(
                f'<tr><td class="name">{html.escape(system)}</td>{"".join(tds)}'
                f"<td>{source}</td></tr>"
            )
        table = f"<table><tr><th>system</th>{head}</tr>{''.join(rows)}</table>"
        headline = columns[0] if columns else None
        figure = ""
        if headline:
            points = [
                (
                    system,
                    float(by_cell[(system, headline)]["value"]),
                    float(by_cell[(system, headline)].get("lower", np.nan)),
                    float(by_cell[(system, headline)].get("upper", np.nan)),
                )
                for system in systems
                if (system, headline) in by_cell
                and not pd.isna(by_cell[(system, headline)]["value"])
            ]
            if points:
                caveat = f" -- {NOT_DECISIVE}: see above" if title in warnings else ""
                figure = forest_svg(f"{headline} (95% CI){caveat}", points)
        warning = f'<p class="warn">{html.escape(warnings[title])}</p>' if title in warnings else ""
        parts.append(
            f'<h2>{html.escape(title)}</h2>{warning}<div class="suite">{table}{figure}</div>'
        )
    sources = [f"<sup>{i}</sup> {html.escape(n)}" for i, n in enumerate(notes, 1)]
    parts.append('<div class="notes">' + "<br>".join(sources) + "</div>")
    parts.append(
        '<div class="notes">' + "".join(f"<p>{html.escape(n)}</p>" for n in footnotes) + "</div>"
    )
    parts.append("</div>")
    return "\n".join(parts) + "\n"
