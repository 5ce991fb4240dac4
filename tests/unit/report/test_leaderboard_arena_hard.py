"""Arena-Hard-Auto on the leaderboard by being a suite: its table (arena_hard_scores, written by
its own table code) read through the descriptor's ``board_tables``, its score ranked through
``ranked``, its baseline a row, its judge's known-answer controls in the caption because its
cells are built on it -- and a table no suite declares is an error."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from test_leaderboard import (  # noqa: F401 (tables: a fixture)
    board_tables,
    build,
    controls_summary,
    settings,
    tables,
)

from isqaflow.arena_hard.tables import write_tables
from isqaflow.io import read_jsonl, write_json, write_jsonl
from isqaflow.report.leaderboard import build_leaderboard
from isqaflow.report.validity import validity_brief
from isqaflow.suites import BOARD_TABLES, RANKED, SUITES
from isqaflow.suites.arena_hard import BOARD_COLUMN, JUDGE

EMBEDDED = Path(__file__).resolve().parents[3] / "data/embedded/arena_hard"


def _arena_hard_table(t, judges=("j",)):
    """arena_hard_scores.csv from arena_hard.tables.write_tables on the embedded baseline's
    questions: model "m" ties both games of the first question and wins both of the others,
    "even" loses the odd questions' games and wins the even ones'."""
    baseline = EMBEDDED / "model_answer/handwritten-baseline.jsonl"
    qids = [obj["uid"] for _, obj in read_jsonl(baseline)]
    paths = []
    for judge in judges:
        rows = [
            {
                "question_id": q,
                "model": model,
                "judge": judge,
                "games": [{"user_prompt": "", "judgment": "", "score": s} for s in games],
            }
            for i, q in enumerate(qids)
            for model, games in (
                ("m", ["A=B", "A=B"] if i == 0 else ["B>A", "A>B"]),
                ("even", [["A>B", "B>A"], ["B>A", "A>B"]][i % 2]),
            )
        ]
        path = t / f"judgments-{judge}.jsonl"
        write_jsonl(path, rows)
        paths.append(path)
    outs = [t / f"arena_hard_scores.{ext}" for ext in ("csv", "md", "tex")]
    write_tables(paths, list(judges), baseline, [], [], outs, strong_weight=3, rounds=50, seed=0)
    return outs[0], len(qids)


def _board(t, board):
    """The leaderboard over the tables in ``board`` alone: no score files, the summary in ``t``, no
    systems file, no ISQA datasets."""
    return build_leaderboard(
        t / "lb",
        tables=board,
        score_paths=[],
        validity_summary_path=t / "summary.json",
        systems_path=None,
        settings=settings({}, rounds=50, seed=0),
    )


def test_every_board_table_is_one_its_suite_writes_and_the_ranks_come_from_the_descriptors():
    """The leaderboard's inputs and ranked columns are the descriptors' (no second list): each
    board table is one of its suite's tables or that table's long form."""
    for entry in SUITES:
        for name in entry.board_tables:
            assert name in entry.table_names or name.removesuffix("_long") in entry.table_names
    assert BOARD_TABLES == tuple(t for s in SUITES for t in s.board_tables)
    assert "arena_hard_scores" in BOARD_TABLES
    assert RANKED == ("DRFR overall", "Bradley-Terry", BOARD_COLUMN)


def test_arena_hard_is_a_section_of_the_leaderboard_with_its_baseline_as_a_ranked_row(tables):  # noqa: F811
    t = tables
    scores, n = _arena_hard_table(t)
    write_json(t / "summary.json", controls_summary({(JUDGE, "j"): 7, ("DRFR judge", "local"): 7}))
    board = _board(t, {"drfr_table5_long": t / "drfr_table5_long.csv", "arena_hard_scores": scores})
    table = pd.read_csv(scores)
    m = table[table["model"] == "m"].iloc[0]
    assert board.loc["m", BOARD_COLUMN] == (
        f"{m['score']:.1f} [{m['lower']:.1f}, {m['upper']:.1f}]\u2021 (n={n})"  # few items
    )
    assert m["score"] > 75 and m["lower"] < m["upper"]
    # the baseline: the fit's anchor, 50 without an interval, ranked as arena-hard ranks it
    assert board.loc["handwritten-baseline", BOARD_COLUMN] == f"50.0 (n={n})"
    assert board.loc["handwritten-baseline", "source"].startswith("baseline: ")
    assert board.loc["m", f"rank {BOARD_COLUMN}"] == "1 of 3"
    assert board.loc["handwritten-baseline", f"rank {BOARD_COLUMN}"].endswith(" of 3")
    md = (t / "lb.md").read_text()
    section = md.split("Arena-Hard-Auto v0.1:")[1].split("\n\n")[1]  # its table
    assert "| m " in section and "| even " in section and "DRFR overall" not in section
    # each cell links to its answerer's items in the suite's browser, the baseline's to the judge's
    assert "](../browser/arena_hard.html#system=m&judge=j)" in section
    assert "](../browser/arena_hard.html#judge=j)" in section
    caption = md.split("\n\n")[0]
    # its cells are built on the Arena-Hard judge, so its controls close the caption; the
    # arena's judge and ISQA's metrics have no cell here and are not named
    assert validity_brief(controls_summary({(JUDGE, "j"): 7}), JUDGE) in caption
    assert "arena judge" not in caption and "QAGS" not in caption and "ROUGE" not in caption
    assert "Arena-Hard-Auto's score: win rate % against its baseline" in md
    long = pd.read_csv(t / "lb_long.csv")
    row = long[(long["system"] == "m") & (long["column"] == BOARD_COLUMN)].iloc[0]
    assert row["n"] == n and row["battles"] == 2 * n  # two games each, none strong


def test_two_arena_hard_judges_give_a_column_each(tables):  # noqa: F811
    t = tables
    scores, _ = _arena_hard_table(t, judges=("j1", "j2"))
    write_json(t / "summary.json", controls_summary({(JUDGE, "j1"): 7}))
    board = _board(t, {"arena_hard_scores": scores})
    assert {f"{BOARD_COLUMN} [j1]", f"{BOARD_COLUMN} [j2]"} <= set(board.columns)


def test_a_table_no_suite_declares_is_an_error(tables):  # noqa: F811
    t = tables
    with pytest.raises(
        ValueError, match=r"no suite declares the table\(s\) \['arena_hard_score'\]"
    ):
        _board(t, {"arena_hard_score": t / "x.csv"})


def test_the_full_board_still_names_every_instrument_its_cells_rest_on(tables):  # noqa: F811
    """With every suite's table, the caption lists the instruments in the order of their
    columns: DRFR's judge, the arena's, ISQA's two metrics, then Arena-Hard's."""
    t = tables
    scores, _ = _arena_hard_table(t)
    build(t)  # the other suites' tables as the fixture writes them
    build_leaderboard(
        t / "leaderboard",
        tables={**board_tables(t), "arena_hard_scores": scores},
        score_paths=[t / "scores.jsonl"],
        validity_summary_path=t / "summary.json",
        systems_path=None,
        settings=settings({"qasper/mine": ["mine"]}, rounds=50, seed=0),
    )
    caption = (t / "leaderboard.md").read_text().split("\n\n")[0]
    at = [caption.index(f"{i} ") for i in ("DRFR judge", "arena judge", "QAGS", "QuestEval", JUDGE)]
    assert at == sorted(at)
    assert caption.endswith("ROUGE has no control (a reference overlap, not a judge).")


def test_the_score_at_equal_style_stands_beside_the_score_unranked(tables):  # noqa: F811
    """With style control in the table, its score is a column of its own with its interval
    (the baseline's without), not ranked: the rank stays the plain score's."""
    t = tables
    scores, n = _arena_hard_table(t)
    table = pd.read_csv(scores)
    table["style score"] = [55.0, 50.0, 45.0][: len(table)]
    table["style lower"], table["style upper"] = 30.0, 70.0
    table.to_csv(scores, index=False)
    write_json(t / "summary.json", controls_summary({(JUDGE, "j"): 7}))
    board = _board(t, {"arena_hard_scores": scores})
    column = "Arena-Hard style-controlled score"
    rows = table.set_index("model")
    for model in rows.index:
        expected = (
            f"{rows.loc[model, 'style score']:.1f} (n={n})"
            if rows.loc[model, "baseline"]
            else f"{rows.loc[model, 'style score']:.1f} [30.0, 70.0]\u2021 (n={n})"
        )
        assert board.loc[model, column] == expected
    assert f"rank {column}" not in board.columns


def test_a_withheld_style_interval_is_said_in_the_cell(tables):  # noqa: F811
    """Too many resamples with one outcome: the table gives the style score without an interval
    (isqaflow.arena_hard.style); the board's cell says the interval is undecided."""
    t = tables
    scores, n = _arena_hard_table(t)
    table = pd.read_csv(scores)
    table["style score"] = 60.0
    table["style lower"], table["style upper"] = float("nan"), float("nan")
    table.to_csv(scores, index=False)
    write_json(t / "summary.json", controls_summary({(JUDGE, "j"): 7}))
    board = _board(t, {"arena_hard_scores": scores})
    column = "Arena-Hard style-controlled score"
    assert board.loc["m", column] == f"60.0 (n={n}) no interval: undecided"
    assert board.loc["handwritten-baseline", column] == f"60.0 (n={n})"  # the anchor: none asked
