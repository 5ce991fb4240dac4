"""docs/reproduction.md is what isqaflow.arena.reproduction makes of ../shared/data/peers, and
every published number it claims to reproduce is within its tolerance (Bradley-Terry scores and
the style-free fit within 0.01 points, raw win rates and the DRFR to float rounding, arena-hard's
printed token averages to their integer part); the rows the released files cannot decide
(AlpacaEval's length-controlled win rates, arena-hard's style-controlled scores) claim none and
say so.  About 15 s of CPU (the rows are built once, for the module)."""

from __future__ import annotations


import pytest
from conftest import REPO, SHARED_DATA

from isqaflow.arena.reproduction import (
    EXACT,
    ROW_BUILDERS,
    ReproductionRow,
    render_markdown,
    reproduction_rows,
)

DOC = REPO / "docs/reproduction.md"


@pytest.fixture(scope="module")
def rows() -> list[ReproductionRow]:
    peers = SHARED_DATA / "peers"
    if not peers.is_dir():
        pytest.skip(f"the peers' released files are not present ({peers}); a fresh clone has none")
    return reproduction_rows(peers)


def test_regenerating_gives_the_committed_file(rows):
    assert render_markdown(rows) == DOC.read_text(encoding="utf-8"), (
        "docs/reproduction.md is stale: python tools/reproduction.py"
    )


def _by_benchmark(rows):
    out = {}
    for row in rows:
        out.setdefault(row.benchmark, []).append(row)
    return out


def test_every_published_number_is_within_its_tolerance(rows):
    outside = [(r.quantity, r.published, r.ours) for r in rows if r.outside]
    assert outside == []
    claimed = [r for r in rows if r.tolerance is not None]
    assert all(abs(r.ours - r.published) <= r.tolerance for r in claimed)
    assert all(r.reproduced == "yes" for r in claimed)
    by_benchmark = _by_benchmark(rows)
    # what must match, as the issue says: scores within 0.01, raw win rates and DRFR exactly
    scores = [r for r in by_benchmark["Arena-Hard-Auto v0.1"] if "score" in r.quantity]
    assert len(scores) == 2 and all(r.tolerance == 0.01 for r in scores)
    raw = [r for r in by_benchmark["AlpacaEval 2.0"] if ": win rate" in r.quantity]
    assert len(raw) == 16 and all(r.tolerance == EXACT for r in raw)
    (infobench,) = by_benchmark["InFoBench"]
    assert infobench.tolerance == EXACT and infobench.ours == pytest.approx(87.6)


def test_length_controlled_rows_claim_nothing_and_say_why(rows):
    """16 LC rows, one per annotated model, none claiming a tolerance (the difficulty file is
    Hub-only); the published coefficients with the implied difficulty still land nearer the
    published LC than the raw win rate does, on average (test_peer_statistics says per model)."""
    alpaca = _by_benchmark(rows)["AlpacaEval 2.0"]
    lc = {r.quantity.split(":")[0]: r for r in alpaca if "length-controlled" in r.quantity}
    raw = {r.quantity.split(":")[0]: r for r in alpaca if ": win rate" in r.quantity}
    assert len(lc) == 16 and lc.keys() == raw.keys()
    for row in lc.values():
        assert row.tolerance is None and not row.within and not row.outside
        assert row.reproduced.startswith("no") and "Hugging Face Hub" in row.why
        assert 0 < row.ours < 100
    lc_gap = sum(abs(r.difference) for r in lc.values())
    raw_gap = sum(abs(raw[m].ours - lc[m].published) for m in lc)
    assert lc_gap < raw_gap / 2, (lc_gap, raw_gap)


def test_style_control_rows(rows):
    """arena-hard style control: the token averages printed as integer parts (0 <= ours -
    published < 1) and the style-free fit within 0.01 of the Bradley-Terry score are claimed;
    the style-controlled scores (published 49.7 and 34.6) are not, and fall below them here."""
    style = _by_benchmark(rows)["Arena-Hard-Auto v0.1 (style control)"]
    tokens = [r for r in style if "#tokens" in r.quantity]
    assert [r.published for r in tokens] == [423, 354, 329]
    assert all(r.tolerance == 1.0 and 0 <= r.difference < 1 for r in tokens)
    free = [r for r in style if "without style columns" in r.quantity]
    assert len(free) == 2 and all(r.tolerance == 0.01 and r.within for r in free)
    controlled = {r.quantity.split(":")[0]: r for r in style if "style-controlled" in r.quantity}
    assert {m: r.published for m, r in controlled.items()} == {
        "gpt-4-0613": 49.7,
        "gpt-3.5-turbo-0125": 34.6,
    }
    for row in controlled.values():
        assert row.tolerance is None and row.reproduced.startswith("no")
        assert "every leaderboard model" in row.why
        assert row.difference < -5  # two terser models' battles: see the row's why


def test_a_row_outside_its_tolerance_is_flagged_and_rendered():
    row = ReproductionRow("b", "q", published=10.0, ours=10.5, tolerance=0.1, why="w")
    assert not row.within and row.difference == pytest.approx(0.5)
    assert row.outside and row.reproduced.startswith("**NO")
    assert (
        "| b | q | 10.00 | 10.50 | +0.5000 | 0.1 | **NO: outside its tolerance** | w |"
        in render_markdown([row])
    )
    exact = ReproductionRow("b", "q", published=1.0, ours=1.0 + 1e-12, tolerance=EXACT, why="w")
    assert exact.within and "0 (< 1e-09) | 1e-09 | yes |" in render_markdown([exact])


def test_a_row_claiming_no_tolerance_is_never_outside_and_says_so():
    row = ReproductionRow("b", "q", published=10.0, ours=30.0, tolerance=None, why="w")
    assert not row.within and not row.outside
    assert "| +20.0000 | none claimed | no (not decidable from the released files) | w |" in (
        render_markdown([row])
    )


def test_the_builders_are_a_list_others_can_extend():
    assert isinstance(ROW_BUILDERS, list) and all(callable(build) for build in ROW_BUILDERS)
