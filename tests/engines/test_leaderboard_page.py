"""The leaderboard at a glance (isqaflow.report.front) in a real headless Chromium at 1,400 px:
the page is no wider than the window, so every score column shows without scrolling (before:
the numbers of leaderboard.html needed ~3,000 px).  A screenshot is written beside the test's
files and its path printed (issue 41 item 5)."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pandas as pd
import pytest

from isqaflow.report.front import front_page

WIDTH = 1400
# the embedded default's arena columns: two settings (judges), five scores each
ARENA = [
    f"{name} [bm25-k5.{judge}]"
    for judge in ("local", "local-raw")
    for name in (
        "arena win % vs LFRQA",
        "arena win+tie % vs LFRQA",
        "arena LC win % vs LFRQA",
        "Bradley-Terry",
        "Elo",
    )
]
DRFR = ["DRFR overall", "DRFR easy", "DRFR hard"]
ISQA = ["QAGS", "QuestEval", "ROUGE", "summary DRFR", "summary win % vs abstract [local]"]
SYSTEMS = ["smollm2", "smollm2-nocot", "smollm2-feedback", "handwritten", "my-very-long-rag-name"]


def page() -> str:
    rng = np.random.default_rng(0)
    rows, cells = [], {}
    for column in DRFR + ARENA + ISQA:
        for system in SYSTEMS:
            value = float(
                rng.uniform(900, 1100)
                if "Elo" in column or "Bradley" in column
                else rng.uniform(0, 100)
            )
            rows.append(
                {
                    "system": system,
                    "column": column,
                    "value": value,
                    "lower": value - 12.345,
                    "upper": value + 12.345,
                    "n": 805,
                }
            )
            # every mark, not decisive too (the widest cells a run can give)
            cells.setdefault(system, {})[column] = (
                f"{value:.1f} [..] (n=805) SELF\u00b6 not decisive"
            )
    ranks = {
        f"rank {c}": pd.Series(
            {s: f"{i + 1} of {len(SYSTEMS)} not decisive" for i, s in enumerate(SYSTEMS)}
        )
        for c in ("DRFR overall", ARENA[3], ARENA[8])
    }
    sections = [
        ("InFoBench (DRFR)", DRFR, SYSTEMS),
        ("RAG-QA Arena", ARENA, SYSTEMS),
        ("ISQA summaries", ISQA, SYSTEMS),
    ]
    warnings = {
        title: "The arena judge local cannot rank these systems. " * 3 for title, *_ in sections
    }
    coverage = {
        "handwritten": "handwritten: file, arena 3/15, partial: fiqa 1 science 1 technology 1; drfr 4/12, partial: user_oriented_task_1 +3 more"
    }
    return front_page(
        sections,
        pd.DataFrame(rows),
        cells,
        ranks,
        coverage,
        ["A note. " * 40],
        "Controls: ...",
        warnings,
    )


MEASURE = """<script>
window.addEventListener('load', () => {
  const first = [...document.querySelectorAll('table')].map(t => t.rows[1].cells[1].getBoundingClientRect().right);
  document.body.setAttribute('data-scroll-width', document.documentElement.scrollWidth);
  document.body.setAttribute('data-first-score-right', Math.max(...first));
});
</script>"""


def chromium(*args: str) -> subprocess.CompletedProcess:
    from test_browser import chromium as binary

    found = binary()
    if found is None:
        pytest.skip("chromium is not installed: apt-get install chromium (Debian)")
    return subprocess.run(
        [
            found,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            f"--window-size={WIDTH},1000",
            "--hide-scrollbars",
            "--virtual-time-budget=5000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


@pytest.mark.slow
def test_the_page_fits_1400_px_in_chromium(tmp_path, capsys):
    html = tmp_path / "at_a_glance.html"
    html.write_text("<!doctype html><html><body>" + page() + "</body></html>")
    measured = tmp_path / "measured.html"
    measured.write_text(html.read_text().replace("</body>", MEASURE + "</body>"))
    dom = chromium("--dump-dom", measured.as_uri()).stdout
    scroll = int(re.search(r'data-scroll-width="(\d+)"', dom).group(1))
    first = float(re.search(r'data-first-score-right="([\d.]+)"', dom).group(1))
    assert scroll <= WIDTH, f"the page is {scroll} px wide"
    assert first < WIDTH  # every suite's first score column in view
    shot = tmp_path / "at_a_glance.png"
    chromium(f"--screenshot={shot}", html.as_uri())
    assert shot.stat().st_size > 10_000
    with capsys.disabled():
        print(f"\nscreenshot of the leaderboard at a glance ({WIDTH} px): {shot}")
