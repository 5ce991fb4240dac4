"""The leaderboard across the suites (isqaflow.report.leaderboard), from small tables in
the suites' own CSV formats: one row per system, n per cell, file-based systems' coverage,
each instrument's controls in the caption."""

import dataclasses
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from isqaflow.data.outputs import merge_checks
from isqaflow.io import write_json
from isqaflow.report.leaderboard import (
    PRIOR_MARK,
    LeaderboardSettings,
    build_leaderboard,
    read_ratings,
)
from isqaflow.report.tables import write_table
from isqaflow.report.validity import validity_brief, validity_summary

REPO = Path(__file__).resolve().parents[3]


def exact(k: int, n: int) -> tuple[float, float]:
    """Clopper-Pearson 95% interval of k of n, in % (scipy's exact method)."""
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return 100 * ci.low, 100 * ci.high


# the validity summary (results/validity/summary.json) of one DRFR judge control, 7 items, 6 correct
SUMMARY = validity_summary(
    [
        {
            "instrument": "DRFR judge",
            "name": "local",
            "scope": "infobench",
            "control": "empty_response",
            "item": f"i{i}",
            "rule": "raw",
            "expected": "NO",
            "outcome": "NO" if i else "YES",
            "correct": bool(i),
            "baseline_correct": None,
            "chance": 0.5,
        }
        for i in range(7)
    ]
)


@pytest.fixture
def tables(tmp_path):
    t = tmp_path
    pd.DataFrame(
        [
            {
                "judge": "local",
                "model": "smollm2",
                "Easy": 0.5,
                "Easy_lower": 0.4,
                "Easy_upper": 0.6,
                "Easy_n": 6,
                "Hard": 0.25,
                "Hard_lower": 0.1,
                "Hard_upper": 0.4,
                "Hard_n": 6,
                "Overall": 0.4,
                "Overall_lower": 0.3,
                "Overall_upper": 0.5,
                "Overall_n": 12,
            },
            {
                "judge": "local",
                "model": "mine",
                "Easy": 1.0,
                "Easy_lower": 1.0,
                "Easy_upper": 1.0,
                "Easy_n": 2,
                "Hard": 0.5,
                "Hard_lower": 0.2,
                "Hard_upper": 0.8,
                "Hard_n": 2,
                "Overall": 0.7,
                "Overall_lower": 0.5,
                "Overall_upper": 0.9,
                "Overall_n": 4,
            },
        ]
    ).to_csv(t / "drfr_table5_long.csv", index=False)
    pd.DataFrame(
        [
            {
                "dataset": "qasper",
                "summarizer": "mine",
                "system": "mine",
                "drfr": 0.8,
                "lower": 0.6,
                "upper": 1.0,
                "n_papers": 2,
                "n_questions": 10,
                "n_invalid": 0,
            }
        ]
    ).to_csv(t / "drfr_summaries_long.csv", index=False)
    rates = pd.DataFrame(
        [
            {
                "setting": "bm25-k5.local",
                "domain": d,
                "model": m,
                "rule": "calibrated",
                "n_valid": n,
                "win_rate": w,
                "win_tie_rate": w,
                "LC win rate %": lc,
                "LC lower": lc - 5,
                "LC upper": lc + 5,
            }
            for d, m, n, w, lc in (
                ("fiqa", "smollm2", 5, 20.0, float("nan")),
                ("overall", "smollm2", 15, 20.0, 30.0),
                ("overall", "mine", 3, 66.7, 50.0),
            )
        ]
    )
    write_table(rates.set_index(["setting", "domain", "model"]), [t / "arena_win_rates.csv"])
    columns = pd.MultiIndex.from_tuples(
        [
            ("setting", ""),
            ("rule", ""),
            ("battles", ""),
            ("Elo", "rating"),
            ("Elo", "lower"),
            ("Elo", "upper"),
            ("Elo", "rank"),
            ("Bradley-Terry", "rating"),
            ("Bradley-Terry", "lower"),
            ("Bradley-Terry", "upper"),
            ("Bradley-Terry", "rank"),
            ("votes", ""),
        ]
    )
    ratings = pd.DataFrame(
        [
            [
                "bm25-k5.local",
                "calibrated",
                "A: reference pairs",
                990,
                980,
                1000,
                1,
                980,
                900,
                1050,
                1,
                15,
            ],
            [
                "bm25-k5.local",
                "calibrated",
                "B: + all pairs",
                995,
                985,
                1005,
                1,
                985,
                905,
                1055,
                1,
                18,
            ],
            [
                "bm25-k5.local",
                "calibrated",
                "B: + all pairs",
                1010,
                990,
                1030,
                1,
                1020,
                950,
                1090,
                1,
                40,
            ],
            [
                "bm25-k5.local",
                "calibrated",
                "B: + all pairs",
                1000,
                985,
                1015,
                1,
                1000,
                940,
                1070,
                1,
                6,
            ],
        ],
        columns=columns,
        index=pd.Index(["smollm2", "smollm2", "lfrqa", "mine"], name="model"),
    )
    write_table(ratings, [t / "arena_ratings.csv"])
    summaries = pd.DataFrame(
        [
            {
                "dataset": "qasper",
                "summarizer": "mine",
                "judge": "local",
                "comparison": "mine vs abstract",
                "rule": "calibrated",
                "pairs": 2,
                "invalid": 0,
                "win %": 50.0,
                "win+tie %": 50.0,
            }
        ]
    )
    write_table(
        summaries.set_index(["dataset", "summarizer", "judge", "comparison"]),
        [t / "arena_summaries.csv"],
    )
    scores = [
        {
            "paper_id": p,
            "dataset": "qasper",
            "summarizer": s,
            "system": sys_,
            "final": True,
            "qags": q,
            "questeval": 0.2,
            "rouge": 0.1,
        }
        for p, s, sys_, q in (
            ("p1", "mine", "mine", 0.5),
            ("p2", "mine", "mine", 0.7),
            ("p1", "smollm2", "baseline_2", 0.1),
            ("p1", "smollm2", "baseline_1", 0.9),
        )
    ]
    (t / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in scores))
    write_json(t / "summary.json", SUMMARY)
    for suite, n, total in (("arena", 3, 15), ("drfr", 4, 12), ("isqa", 2, 3)):
        write_json(
            t / f"{suite}.json",
            {
                "suite": suite,
                "system": "mine",
                "n": n,
                "n_dataset": total,
                "coverage": "partial",
                "sha256": "0" * 64,
            },
        )
    merge_checks([t / f"{s}.json" for s in ("arena", "drfr", "isqa")], t / "checked.json")
    return t


def settings(summary_systems, rounds, seed, judge_pairs=()) -> LeaderboardSettings:
    return LeaderboardSettings(
        summary_systems=summary_systems, judge_pairs=tuple(judge_pairs), rounds=rounds, seed=seed
    )


def test_the_settings_come_from_the_rules_params():
    """LeaderboardSettings.from_rule reads the rule leaderboard's params (its params block names them)."""
    block = re.split(r"^rule ", (REPO / "rules/leaderboard.smk").read_text(), flags=re.MULTILINE)
    body = next(b for b in block if b.startswith("leaderboard:"))
    params = body.split("    params:\n", 1)[1].split("    script:", 1)[0]
    assert set(re.findall(r"^        (\w+)=", params, flags=re.MULTILINE)) == {
        "summary_systems",
        "judge_pairs",
        "rounds",
        "seed",
        "origins",
        "code",
    }
    values = {
        "summary_systems": {"qasper/mine": ["mine"]},
        "judge_pairs": PAIRS,
        "rounds": 200,
        "seed": 1,
        "origins": {},
        "code": "sha",
    }
    got = LeaderboardSettings.from_rule(SimpleNamespace(**values), SimpleNamespace())
    assert got == settings({"qasper/mine": ["mine"]}, rounds=200, seed=1, judge_pairs=PAIRS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.seed = 2  # type: ignore[misc]


FIXTURE_TABLES = (
    "drfr_table5_long",
    "drfr_summaries_long",
    "arena_win_rates",
    "arena_ratings",
    "arena_summaries",
)


def board_tables(t, names=FIXTURE_TABLES):
    """Board tables of the DRFR and arena suites as the ``tables`` fixture writes them."""
    return {name: t / f"{name}.csv" for name in names}


def test_one_row_per_system_with_n_per_cell(tables):
    t = tables
    board = build_leaderboard(
        t / "leaderboard",
        tables=board_tables(t),
        score_paths=[t / "scores.jsonl"],
        validity_summary_path=t / "summary.json",
        systems_path=t / "checked.json",
        settings=settings(
            {"qasper/mine": ["mine"], "qasper/smollm2": ["baseline_2"]}, rounds=200, seed=1
        ),
    )
    assert list(board.index) == [
        "mine",
        "smollm2",
        "smollm2 baseline_2",
        "abstract",
        "lfrqa",
    ]  # file-based systems first; the suites' references last
    mine = board.loc["mine"]
    assert (
        mine["source"] == "file: arena (3/15, partial), drfr (4/12, partial), isqa (2/3, partial)"
    )
    # every interval from fewer than 10 items carries the small-n mark; the DRFR judge fails its
    # control (6 of 7), so its cells are marked not decisive (the values kept)
    assert mine["DRFR overall"] == "70.0 [50.0, 90.0]\u2021 (n=4) not decisive"
    assert (
        mine["DRFR easy"] == "100.0 [100.0, 100.0]\u2021\u00a7 (n=2) not decisive"
    )  # \u00a7: a zero-width interval
    # win rates: the exact (Clopper-Pearson) interval from the counts, no small-n mark (it keeps its coverage)
    assert (
        mine["arena win % vs LFRQA"] == f"66.7 [{exact(2, 3)[0]:.1f}, {exact(2, 3)[1]:.1f}] (n=3)"
    )
    assert mine["arena LC win % vs LFRQA"] == "50.0 [45.0, 55.0]\u2021 (n=3)"
    assert (
        mine["Elo"] == "1000 [985, 1015]\u2021 (n=6)"
    )  # the widest battles (B), the reference left out
    assert mine["QAGS"].startswith("60.0 [") and mine["QAGS"].endswith("(n=2)")
    assert (
        # without judge pairs the summaries' DRFR judges are unknown: no mark (in a run the
        # pairs name every judge)
        mine["summary DRFR"] == "80.0 [60.0, 100.0]\u2021 (n=2)"
        and mine["summary win % vs abstract"] == "50.0 (n=2)"
    )
    smollm2 = board.loc["smollm2"]
    assert (
        smollm2["arena win % vs LFRQA"]
        == f"20.0 [{exact(3, 15)[0]:.1f}, {exact(3, 15)[1]:.1f}] (n=15)"
        and smollm2["Elo"] == "995 [985, 1005] (n=18)"
    )
    assert (
        "\u2021 interval from fewer than 10 items"
        in (t / "leaderboard.md").read_text().split("\n\n", 2)[2]
    )
    assert (
        smollm2["QAGS"] == "" and board.loc["smollm2 baseline_2", "QAGS"] == "10.0 (n=1)"
    )  # one paper: no interval
    assert "smollm2 baseline_1" not in board.index  # not a judged system
    # LFRQA: the arena's reference, a row of its own (tests/unit/report/test_leaderboard_references.py)
    assert board.loc["lfrqa", "source"].startswith("reference: ")
    caption = (t / "leaderboard.md").read_text().split("\n\n")[0]
    for instrument in (
        "DRFR judge",
        "arena judge",
        "QAGS",
        "QuestEval",
    ):  # each column's instrument, briefly
        assert validity_brief(SUMMARY, instrument) in caption
        assert (
            f"{instrument} " in caption
        )  # as the end-to-end test reads every judged table's caption
    assert (
        "DRFR judge 0 of 1 tested controls correct beyond chance (NO EVIDENCE THAT IT SEPARATES BETTER "
        "FROM WORSE on some)"
    ) in caption  # 6/7 correct: p = 0.0625 against chance 0.5
    # the first screen says it plainly: the failing judge cannot rank these systems
    assert caption.startswith(
        "The DRFR judge local cannot rank these systems: it did no better than chance on 1 of its 1 "
        "known-answer controls, so its numbers show what it said, not which system is better. "
        "Leaderboard: "
    )
    assert "The arena judge cannot rank" not in caption  # its controls pass
    assert (
        len(caption) < 800
    )  # short: the full control text is in the validity table, one link away
    csv = pd.read_csv(t / "leaderboard.csv", index_col=0)  # the numbers beside the text
    columns = list(csv.columns)
    at = columns.index("DRFR overall")
    assert columns[at : at + 5] == [
        "DRFR overall",
        *(f"DRFR overall {s}" for s in ("value", "lower", "upper", "n")),
    ]
    assert tuple(
        csv.loc["mine", [f"DRFR overall {s}" for s in ("value", "lower", "upper", "n")]]
    ) == (pytest.approx(70.0), pytest.approx(50.0), pytest.approx(90.0), 4)
    assert csv.loc["mine", "arena win % vs LFRQA lower"] == pytest.approx(exact(2, 3)[0])
    assert "QAGS n" in columns and pd.isna(csv.loc["smollm2", "QAGS n"])
    long = pd.read_csv(t / "leaderboard_long.csv")
    row = long[(long["system"] == "mine") & (long["column"] == "DRFR overall")].iloc[0]
    assert (row["value"], row["n"]) == (pytest.approx(70.0), 4)


def test_ratings_csv_reads_back_flat(tables):
    ratings = read_ratings(tables / "arena_ratings.csv")
    assert {"model", "setting", "battles", "Elo rating", "Bradley-Terry upper", "votes"} <= set(
        ratings.columns
    )
    assert list(ratings["model"]) == ["smollm2", "smollm2", "lfrqa", "mine"]


def test_no_file_based_system(tables):
    t = tables
    board = build_leaderboard(
        t / "lb",
        tables={
            "drfr_table5_long": t / "drfr_table5_long.csv",
        },
        score_paths=[],
        validity_summary_path=t / "summary.json",
        systems_path=None,
        settings=settings({}, rounds=100, seed=0),
    )
    assert set(board["source"]) == {"model"} and list(board.columns) == [
        "rank DRFR overall",
        "source",
        "DRFR overall",
        "DRFR easy",
        "DRFR hard",
    ]


def test_online_elo_that_has_not_converged_stays_off_the_leaderboard(tables):
    """Bradley-Terry is the headline; Elo only where arena_ratings says it has converged."""
    t = tables
    ratings = pd.read_csv(t / "arena_ratings.csv", header=[0, 1], index_col=0)
    ratings[("Elo", "converged")] = False
    write_table(ratings, [t / "arena_ratings.csv"])
    kwargs = {
        "tables": {
            "arena_ratings": t / "arena_ratings.csv",
        },
        "score_paths": [],
        "validity_summary_path": t / "summary.json",
        "systems_path": None,
        "settings": settings({}, rounds=100, seed=0),
    }
    board = build_leaderboard(t / "lb", **kwargs)
    assert "Bradley-Terry" in board.columns and "Elo" not in board.columns
    ratings[("Elo", "converged")] = True
    write_table(ratings, [t / "arena_ratings.csv"])
    board = build_leaderboard(t / "lb", **kwargs)
    assert list(board.columns)[-2:] == ["Bradley-Terry", "Elo"]


def test_a_partial_files_row_says_which_items_it_covers():
    from isqaflow.report.leaderboard import coverage_note

    assert coverage_note({"n": 15, "n_dataset": 15, "coverage": "full"}) == "15/15"
    assert (
        coverage_note(
            {
                "n": 3,
                "n_dataset": 15,
                "coverage": "partial",
                "covered": ["fiqa:4021", "fiqa:4302", "science:science-search-test-12"],
            }
        )
        == "3/15, partial: fiqa 2 science 1"
    )
    assert (
        coverage_note(
            {"n": 4, "n_dataset": 12, "coverage": "partial", "covered": ["t1", "t2", "t3", "t4"]}
        )
        == "4/12, partial: t1 t2 t3 +1 more"
    )
    assert (
        coverage_note({"n": 2, "n_dataset": 3, "coverage": "partial"}) == "2/3, partial"
    )  # an older record


PAIRS = [
    {"suite": "arena", "judge": "local", "system": "smollm2", "self_family": True},
    {"suite": "drfr", "judge": "local", "system": "smollm2", "self_family": False},
    {"suite": "drfr", "judge": "local", "system": "summaries:mine", "self_family": True},
    {"suite": "arena", "judge": "local", "system": "mine", "self_family": False},
]


def build(t, judge_pairs=PAIRS):
    return build_leaderboard(
        t / "leaderboard",
        tables=board_tables(t),
        score_paths=[t / "scores.jsonl"],
        validity_summary_path=t / "summary.json",
        systems_path=t / "checked.json",
        settings=settings(
            {"qasper/mine": ["mine"], "qasper/smollm2": ["baseline_2"]},
            rounds=200,
            seed=1,
            judge_pairs=judge_pairs,
        ),
    )


def test_self_judged_cells_are_flagged_and_every_judged_cell_links_to_its_items(tables, tmp_path):
    from isqaflow.report.table_html import render_table_file

    t = tables
    board = build(t)
    assert board.loc["smollm2", "arena win % vs LFRQA"].endswith(" (n=15) SELF")
    assert board.loc["smollm2", "Bradley-Terry"].endswith(" SELF")
    assert "SELF" not in board.loc["smollm2", "DRFR overall"]  # its DRFR judge is of another family
    assert "SELF" not in board.loc["mine", "arena win % vs LFRQA"]
    assert board.loc["mine", "summary DRFR"].endswith(
        " SELF not decisive"
    )  # the summarizer's family judges its summaries (and the DRFR judge fails its control)
    assert (
        "](" not in (t / "leaderboard.csv").read_text()
        and "](" not in (t / "leaderboard.tex").read_text()
    )
    md = (t / "leaderboard.md").read_text()
    assert (
        "(n=15) SELF](../browser/arena.html#system=smollm2&setting=bm25-k5&judge=local&kind=reference)"
        in md
    )
    assert (
        "[70.0 [50.0, 90.0]\u2021 (n=4) not decisive](../browser/drfr.html#system=mine&judge=local&kind=response)"
        in md
    )
    assert "(../browser/drfr.html#system=mine&setting=summaries%20qasper%2Fmine&kind=summary)" in md
    caption, _, notes = md.split("\n\n", 2)
    assert "SELF" not in caption
    assert "SELF: judged by a judge of the system's own model family" in notes
    assert "\u00a7 interval of zero width" in notes and "rank: 1 + the systems" in notes
    long = pd.read_csv(t / "leaderboard_long.csv")
    row = long[(long["system"] == "mine") & (long["column"] == "DRFR easy")].iloc[0]
    assert (
        bool(row["degenerate"])
        and not bool(row["self_judged"])
        and row["browser"].startswith("../browser/")
    )
    page = tmp_path / "leaderboard.html"
    render_table_file(t / "leaderboard.md", page, "leaderboard")
    text = page.read_text()
    assert re.search(
        r'<a href="\.\./browser/arena\.html#system=smollm2&amp;setting=bm25-k5&amp;judge=local&amp;'
        r'kind=reference">20\.0 \[[0-9.]+, [0-9.]+\] \(n=15\) SELF</a>',
        text,
    )
    assert '<a href="validity.html">validity</a>' in text
    # without judge families: no flag, no SELF note
    build(t, judge_pairs=())
    assert "SELF" not in (t / "leaderboard.md").read_text()


def test_rank_respects_ties_within_the_interval_and_sorts_the_rows(tables):
    from isqaflow.report.leaderboard import interval_ranks

    numbers = pd.DataFrame(
        {
            "system": ["a", "b", "c", "d"],
            "value": [15, 25, 20, 5.0],
            "lower": [10, 21, 15, float("nan")],
            "upper": [20, 30, 25, float("nan")],
        }
    )
    # b above a (21 > 20); c overlaps both; d (no interval: its point) below all three
    assert interval_ranks(numbers).to_dict() == {"a": 2, "b": 1, "c": 1, "d": 4}
    t = tables
    table5 = pd.read_csv(t / "drfr_table5_long.csv")
    table5.loc[table5["model"] == "mine", ["Overall", "Overall_lower", "Overall_upper"]] = [
        0.9,
        0.8,
        0.95,
    ]
    table5.to_csv(t / "drfr_table5_long.csv", index=False)
    board = build(t)
    assert list(board.columns[:2]) == ["rank DRFR overall", "rank Bradley-Terry"]
    # "r of N", not decisive as the DRFR judge's values are (it fails its control)
    assert (
        board.loc["mine", "rank DRFR overall"] == "1 of 2 not decisive"
        and board.loc["smollm2", "rank DRFR overall"] == "2 of 2 not decisive"
    )
    # by rank; unranked last, the references after the systems
    assert list(board.index) == ["mine", "smollm2", "smollm2 baseline_2", "abstract", "lfrqa"]
    table5.loc[table5["model"] == "mine", ["Overall", "Overall_lower", "Overall_upper"]] = [
        0.1,
        0.05,
        0.2,
    ]
    table5.to_csv(t / "drfr_table5_long.csv", index=False)
    assert list(build(t).index)[:3] == ["smollm2", "mine", "smollm2 baseline_2"]


def test_the_markdown_view_is_one_compact_table_per_suite(tables, tmp_path):
    from isqaflow.report.table_html import render_table_file

    t = tables
    build(t)
    md = (t / "leaderboard.md").read_text()
    text = md.split("\n\n")
    titles = [
        i
        for i, block in enumerate(text)
        if block in ("InFoBench (DRFR):", "RAG-QA Arena:", "ISQA summaries:")
    ]
    assert [text[i] for i in titles] == ["InFoBench (DRFR):", "RAG-QA Arena:", "ISQA summaries:"]
    # the DRFR judge fails its control: its suite's first line says it cannot rank these systems
    assert text[titles[0] + 1].startswith("**The DRFR judge local cannot rank these systems")
    sections = {
        text[i]: text[i + 1 + text[i + 1].startswith("**The ")] for i in titles
    }  # the table after the warning
    drfr, arena, summaries = sections.values()
    assert drfr.splitlines()[0].split("|")[1:3] == [" system   ", " rank DRFR overall   "]
    assert "QAGS" not in drfr and "Bradley-Terry" not in drfr and "smollm2 baseline_2" not in drfr
    assert "rank Bradley-Terry" in arena and "DRFR overall" not in arena
    assert "| smollm2 baseline_2 |" in summaries and "rank" not in summaries.splitlines()[0]
    assert len(drfr.splitlines()) == 2 + 2  # header, separator, mine, smollm2
    page = tmp_path / "leaderboard.html"
    render_table_file(t / "leaderboard.md", page, "leaderboard")
    assert page.read_text().count("<table>") == 3
    # the CSV stays one row per system with every column
    board = pd.read_csv(t / "leaderboard.csv", index_col=0)
    assert {"DRFR overall", "Bradley-Terry", "QAGS"} <= set(board.columns) and len(board) == 5


def test_the_leaderboard_shows_the_judge_panels_agreement_and_leave_one_out(tables):
    """With two arena judges the notes under the tables (and the LaTeX caption) give the panel's kappa
    with its interval and n, the panel verdict rule, the ranking without each judge and the note that
    a judge reusing another's calls is not independent; with one judge, that there is no panel."""
    from isqaflow.arena.judging.judge_audit import panel_tables

    t = tables

    def records(judge, verdicts):
        return [
            {
                "pair_id": f"p{i}",
                "kind": "reference",
                "system_a": s,
                "system_b": "lfrqa",
                "verdict": v,
            }
            for i, (s, v) in enumerate(zip(["s1", "s2", "s3"] * 4, verdicts, strict=True))
        ]

    judged = {
        "bm25-k5": {
            "local": records("local", ["1", "2", "2"] * 4),
            "local-raw": records("local-raw", ["1", "2", "tie"] * 3 + ["1", "1", "2"]),
        }
    }
    agreement, loo = panel_tables(judged, "majority", 200, 1, {"local-raw": "local"})
    write_table(agreement, [t / "judges_panel.csv"], digits=3)
    write_table(loo, [t / "judges_panel_loo.csv"], digits=3)
    kwargs = dict(
        tables=board_tables(t, ("drfr_table5_long", "arena_win_rates", "arena_ratings")),
        score_paths=[],
        validity_summary_path=t / "summary.json",
        systems_path=None,
        settings=settings({}, rounds=50, seed=1),
    )
    build_leaderboard(
        t / "lb",
        **kwargs,
        panel_path=t / "judges_panel.csv",
        panel_loo_path=t / "judges_panel_loo.csv",
    )
    row = agreement.iloc[0]
    kappa = f"Cohen's kappa {row['kappa']:.2f} [{row['lower']:.2f}, {row['upper']:.2f}] (n=12 pairs all judged validly"
    for path in (t / "lb.md", t / "lb.tex"):
        text = path.read_text()
        assert "Arena judge panel (bm25-k5: local, local-raw; panel verdict majority)" in text
        assert kappa in text
        assert (
            "Leave one judge out: without local: Kendall's tau" in text
            and "without local-raw:" in text
        )
        assert "local-raw reads local's model calls" in text and "not independent judges" in text
    # one judge: no panel, said so
    agreement, loo = panel_tables(
        {"bm25-k5": {"local": judged["bm25-k5"]["local"]}}, "majority", 50, 1
    )
    write_table(agreement, [t / "judges_panel.csv"], digits=3)
    write_table(loo, [t / "judges_panel_loo.csv"], digits=3)
    build_leaderboard(
        t / "lb",
        **kwargs,
        panel_path=t / "judges_panel.csv",
        panel_loo_path=t / "judges_panel_loo.csv",
    )
    assert "Arena judge panel (bm25-k5: local): one judge: no panel" in (t / "lb.md").read_text()


def test_the_leaderboard_says_kappa_is_not_identified_for_a_judge_with_one_verdict(tables):
    """The embedded run's raw rule ties every pair: the note says kappa is not identified and why,
    rather than printing the degenerate 0.00 [0.00, 0.00]."""
    from isqaflow.arena.judging.judge_audit import panel_tables

    t = tables
    records = {
        judge: [
            {
                "pair_id": f"p{i}",
                "kind": "reference",
                "system_a": s,
                "system_b": "lfrqa",
                "verdict": v,
            }
            for i, (s, v) in enumerate(zip(["s1", "s2", "s3"] * 2, verdicts, strict=True))
        ]
        for judge, verdicts in {"local": ["1", "2", "2"] * 2, "local-raw": ["tie"] * 6}.items()
    }
    agreement, loo = panel_tables({"bm25-k5": records}, "majority", 50, 1, {"local-raw": "local"})
    write_table(agreement, [t / "judges_panel.csv"], digits=3)
    write_table(loo, [t / "judges_panel_loo.csv"], digits=3)
    build_leaderboard(
        t / "lb",
        tables=board_tables(t, ("drfr_table5_long", "arena_win_rates", "arena_ratings")),
        score_paths=[],
        validity_summary_path=t / "summary.json",
        systems_path=None,
        settings=settings({}, rounds=50, seed=1),
        panel_path=t / "judges_panel.csv",
        panel_loo_path=t / "judges_panel_loo.csv",
    )
    text = (t / "lb.md").read_text()
    assert "Cohen's kappa not identified (local-raw gives 'tie' to all 6 pairs)" in text
    assert "[0.00, 0.00]" not in text


def test_the_summaries_win_rate_has_a_column_per_arena_judge(tables):
    """Issue 36 item 7: with two arena judges one untagged column kept whichever row came last
    (the embedded run: handwritten 50.0 under local, 0.0 under local-raw; one shown)."""
    t = tables
    summaries = pd.read_csv(t / "arena_summaries.csv")
    other = summaries.assign(judge="local-raw", **{"win %": 0.0, "win+tie %": 0.0})
    write_table(
        pd.concat([summaries, other]).set_index(["dataset", "summarizer", "judge", "comparison"]),
        [t / "arena_summaries.csv"],
    )
    board = build(t)
    assert board.loc["mine", "summary win % vs abstract [local]"].startswith("50.0 (n=2)")
    assert board.loc["mine", "summary win % vs abstract [local-raw]"].startswith("0.0 (n=2)")
    assert "summary win % vs abstract" not in board.columns


def test_ratings_the_prior_sets_are_flagged_with_their_rank(tables):
    """Issue 36 item 7: arena_ratings' 'prior-set %' (4.7-9.5% on the embedded run, above the
    ratings table's own 2.5% line) reaches the leaderboard: the cell, its rank and a note."""
    t = tables
    ratings = pd.read_csv(t / "arena_ratings.csv", header=[0, 1], index_col=0)
    ratings[("Bradley-Terry", "prior-set %")] = [1.0, 1.0, 1.0, 1.0]
    write_table(ratings, [t / "arena_ratings.csv"])
    board = build(t)
    assert not any(PRIOR_MARK in str(v) for v in board.to_numpy().ravel())
    ratings[("Bradley-Terry", "prior-set %")] = [9.5, 9.5, 9.5, 9.5]
    write_table(ratings, [t / "arena_ratings.csv"])
    board = build(t)
    assert board.loc["mine", "Bradley-Terry"].endswith(PRIOR_MARK)
    assert str(board.loc["mine", "rank Bradley-Terry"]).endswith(PRIOR_MARK)
    assert not board.loc["mine", "Elo"].endswith(PRIOR_MARK)  # the prior is Bradley-Terry's
    markdown = (t / "leaderboard.md").read_text()
    assert f"{PRIOR_MARK} Bradley-Terry interval set by the pseudo-count prior" in markdown
    long = pd.read_csv(t / "leaderboard_long.csv")
    row = long[(long["system"] == "mine") & (long["column"] == "Bradley-Terry")].iloc[0]
    assert row["prior_set_pct"] == pytest.approx(9.5)


def build_front(t, front):
    return build_leaderboard(
        t / "leaderboard",
        tables=board_tables(t),
        score_paths=[t / "scores.jsonl"],
        validity_summary_path=t / "summary.json",
        systems_path=t / "checked.json",
        settings=settings(
            {"qasper/mine": ["mine"], "qasper/smollm2": ["baseline_2"]},
            rounds=200,
            seed=1,
            judge_pairs=PAIRS,
        ),
        front_path=front,
    )


def test_the_page_at_a_glance_puts_scores_first_and_coverage_in_a_footnote(tables):
    """Issue 41 item 5: per suite the scores first (value, then interval and n small), a short
    source ('file' + a footnote with the coverage), one forest plot per suite."""
    t = tables
    board = build_front(t, t / "front.html")
    page = (t / "front.html").read_text()
    assert page.count("<h2>") == 3 and page.count("<svg") == 3  # one plot per suite
    drfr = page.split("<h2>InFoBench (DRFR)</h2>")[1].split("<h2>")[0]
    header = re.findall(r"<th>(.*?)</th>", drfr)
    assert header[:2] == ["system", "DRFR overall"] and header[-1] == "source"
    value = board.loc["mine", "DRFR overall"].split()[0]  # as in the table, then its marks
    assert f'name">mine</td><td><span class="v">{value}' in drfr
    assert "file<sup>1</sup>" in drfr and "model" in drfr
    coverage = board.loc["mine", "source"].removeprefix("file: ")
    assert "<sup>1</sup> mine: file, " in page and coverage.split(" (")[0] in page
    assert "(n=" not in drfr.split("<table>")[1].split("</table>")[0]  # n beneath, not inline


def controls_summary(correct: dict[tuple[str, str], int]) -> dict:
    """A validity summary of one known-answer control of 7 items per (instrument, name), with
    ``correct`` of them right: 7 passes (p = 0.008), 6 fails (p = 0.0625, chance 0.5)."""
    return validity_summary(
        [
            {
                "instrument": instrument,
                "name": name,
                "scope": "s",
                "control": "c",
                "item": f"i{i}",
                "rule": "raw",
                "expected": "x",
                "outcome": "x",
                "correct": i < k,
                "baseline_correct": None,
                "chance": 0.5,
            }
            for (instrument, name), k in correct.items()
            for i in range(7)
        ]
    )


def test_values_on_a_judge_that_fails_its_controls_are_marked_not_decisive(tables):
    """Issue 40: a leaderboard value built on a judge or metric that fails its known-answer
    controls is kept and marked "not decisive"; its suite says in one sentence that it cannot
    rank these systems; a rank says "r of N"; cells of instruments that pass are not marked."""
    t = tables
    write_json(
        t / "summary.json",
        controls_summary(
            {
                ("DRFR judge", "local"): 6,
                ("arena judge", "local"): 7,
                ("QAGS", "qags"): 6,
                ("QuestEval", "questeval"): 7,
            }
        ),
    )
    board = build_front(t, t / "front.html")
    mine = board.loc["mine"]
    assert mine["DRFR overall"].startswith("70.0 [50.0, 90.0]")  # the value kept
    assert mine["DRFR overall"].endswith(" not decisive")
    assert mine["QAGS"].endswith(" not decisive") and "not decisive" not in mine["ROUGE"]
    assert mine["summary DRFR"].endswith(" not decisive")  # pooled over the DRFR judge
    for column in (
        "arena win % vs LFRQA",
        "Bradley-Terry",
        "QuestEval",
        "summary win % vs abstract",
    ):
        assert "not decisive" not in mine[column], column
    assert mine["rank DRFR overall"].endswith(" of 2 not decisive")
    assert re.fullmatch(r"\d+ of 2", mine["rank Bradley-Terry"])  # mine and smollm2, not LFRQA
    long = pd.read_csv(t / "leaderboard_long.csv").set_index(["system", "column"])
    assert bool(long.loc[("mine", "DRFR overall"), "not_decisive"])
    assert not bool(long.loc[("mine", "Bradley-Terry"), "not_decisive"])
    assert long.loc[("mine", "DRFR overall"), "value"] == pytest.approx(70.0)
    md = (t / "leaderboard.md").read_text()
    drfr = md.split("InFoBench (DRFR):\n\n", 1)[1].split("RAG-QA Arena:", 1)[0]
    arena = md.split("RAG-QA Arena:\n\n", 1)[1].split("ISQA summaries:", 1)[0]
    summaries = md.split("ISQA summaries:\n\n", 1)[1]
    sentence = (
        "The DRFR judge local cannot rank these systems: it did no better than chance on 1 of its "
        "1 known-answer controls, so its numbers show what it said, not which system is better."
    )
    assert drfr.startswith(f"**{sentence}**")
    assert "cannot rank" not in arena
    # the summaries' DRFR (the DRFR judge) and QAGS (the metric) fail: both sentences, one each
    # (in the suites' registry order: ISQA's own metric first, isqaflow.suites.INSTRUMENTS)
    assert summaries.startswith("**The QAGS qags cannot rank these systems")
    assert f" {sentence}**" in summaries.split("\n\n", 1)[0]
    assert "not decisive: built on a judge or metric that did no better than chance" in md
    page = (t / "front.html").read_text()
    front_drfr = page.split("<h2>InFoBench (DRFR)</h2>")[1].split("<h2>")[0]
    assert front_drfr.startswith(f'<p class="warn">{sentence}</p>')
    assert (
        "<td>1 of 2 not decisive</td>" in front_drfr or "<td>2 of 2 not decisive</td>" in front_drfr
    )
    assert "not decisive: see above" in front_drfr  # the plot's title
    front_arena = page.split("<h2>RAG-QA Arena</h2>")[1].split("<h2>")[0]
    assert "warn" not in front_arena and "not decisive" not in front_arena
    assert re.search(r"<td>\d of 2</td>", front_arena)


def test_no_mark_where_every_judge_and_metric_passes_its_controls(tables):
    t = tables
    write_json(
        t / "summary.json",
        controls_summary(
            {
                ("DRFR judge", "local"): 7,
                ("arena judge", "local"): 7,
                ("QAGS", "qags"): 7,
                ("QuestEval", "questeval"): 7,
            }
        ),
    )
    board = build_front(t, t / "front.html")
    for path in ("leaderboard.md", "leaderboard.csv", "leaderboard.tex", "front.html"):
        text = (t / path).read_text()
        assert "not decisive" not in text and "cannot rank" not in text, path
    assert board.loc["mine", "rank DRFR overall"] in ("1 of 2", "2 of 2")
    assert not pd.read_csv(t / "leaderboard_long.csv")["not_decisive"].any()
