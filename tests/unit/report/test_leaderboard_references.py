"""The leaderboard's reference and baseline rows, and records that are not the workflow's own
(the peers' released judgments: isqaflow.data.peers.records.leaderboard_origins): their sections
and sources say what they are, arena-hard's are its suite's score column (the arena's ratings of
the same battles stay off the board), and AlpacaEval's soft preferences give win rates against
its baseline (with AlpacaEval's standard error) and an LC win rate named by its GLM -- no
ratings."""

import numpy as np
import pandas as pd
import pytest
from test_leaderboard import build, tables  # noqa: F401 (a fixture)

from isqaflow.data.peers.records import leaderboard_origins
from isqaflow.io import write_json
from isqaflow.report.leaderboard import LeaderboardSettings, build_leaderboard
from isqaflow.report.tables import write_table
from isqaflow.report.validity import validity_summary


def test_each_suites_reference_is_a_row_marked_and_not_ranked(tables):  # noqa: F811
    """LFRQA (the arena's win rates are against it) and the abstract (the summaries') are rows of
    their own, marked reference in source and rank, the arena's with its Bradley-Terry rating;
    the systems' ranks stay as they were (LFRQA's interval, above both, is not counted)."""
    board = build(tables)
    lfrqa = board.loc["lfrqa"]
    assert lfrqa["source"] == "reference: LFRQA's answers (the win rates' yardstick)"
    assert lfrqa["Bradley-Terry"] == "1020 [950, 1090] (n=40)"
    assert lfrqa["rank Bradley-Terry"] == "reference"
    assert lfrqa["arena win % vs LFRQA"] == "reference"
    assert lfrqa["arena win+tie % vs LFRQA"] == "reference"
    assert board.loc["smollm2", "rank Bradley-Terry"] == "1 of 2"
    assert board.loc["mine", "rank Bradley-Terry"] == "1 of 2"
    abstract = board.loc["abstract"]
    assert abstract["source"] == "reference: the paper's abstract"
    assert abstract["summary win % vs abstract"] == "reference"
    assert abstract["DRFR overall"] == "" and lfrqa["DRFR overall"] == ""  # DRFR has none
    md = (tables / "leaderboard.md").read_text()
    assert "| lfrqa " in md.split("RAG-QA Arena:")[1].split("ISQA summaries:")[0]
    long = pd.read_csv(tables / "leaderboard_long.csv")
    assert set(long[long["system"] == "lfrqa"]["column"]) == {"Bradley-Terry", "Elo"}


# config peers: as config/peers.yaml has it (the files are not read here)
PEERS = {
    "arena-hard-v0.1": {
        "format": "arena_hard_battles",
        "judge": "gpt-4-1106-preview",
        "baseline": "gpt-4-0314",
        "files": ["battles.jsonl"],
    },
    "alpaca_eval_2": {
        "format": "alpaca_eval_annotations",
        "judge": "weighted_alpaca_eval_gpt4_turbo",
        "baseline": "gpt4_1106_preview",
        "files": ["a.json"],
    },
    "infobench-gpt4": {
        "format": "infobench_eval",
        "judge": "gpt-4",
        "system": "gpt-4",
        "files": ["eval.jsonl"],
    },
}


def _ratings(path):
    columns = pd.MultiIndex.from_tuples(
        [("setting", ""), ("rule", ""), ("battles", "")]
        + [(m, s) for m in ("Elo", "Bradley-Terry") for s in ("rating", "lower", "upper", "rank")]
        + [("Elo", "converged"), ("votes", "")]
    )
    rows = [
        ["peers.arena-hard-v0.1", "released", "A: reference pairs"]
        + [r, r - 5, r + 5, 1] * 2
        + [True, 1500]
        for r in (1000, 912, 870)
    ]
    index = pd.Index(["gpt-4-0314", "gpt-4-0613", "gpt-3.5-turbo-0125"], name="model")
    write_table(pd.DataFrame(rows, columns=columns, index=index), [path])


def _arena_hard_scores(path):
    """arena_hard_scores as the peers' rule writes it: judge gpt-4-1106-preview, the baseline at
    50 and two models."""
    rows = [
        ("gpt-4-0314", 50.0, 50.0, 50.0, 2658, True),
        ("gpt-4-0613", 37.9, 35.4, 40.8, 1244, False),
        ("gpt-3.5-turbo-0125", 23.3, 21.0, 25.0, 1414, False),
    ]
    pd.DataFrame(
        [
            {
                "judge": "gpt-4-1106-preview",
                "model": m,
                "score": score,
                "lower": lo,
                "upper": hi,
                "questions": 500,
                "battles": battles,
                "games_left_out": 0 if baseline else np.nan,
                "answer_chars": np.nan,
                "baseline": baseline,
            }
            for m, score, lo, hi, battles, baseline in rows
        ]
    ).to_csv(path, index=False)


def _lc(path):
    """Two AlpacaEval systems: one whose LC is identified, one whose is not; and an arena-hard row
    (battles, not soft preferences: not on the board from this table)."""
    rows = [
        ("peers.alpaca_eval_2", "m-long", "gpt4_1106_preview", 60.0, 1.0, 55.0, 52.0, 58.0, "identified"),
        ("peers.alpaca_eval_2", "m-short", "gpt4_1106_preview", 20.0, 0.5, np.nan, np.nan, np.nan,
         "not identified: the system is not longer in 800 of 805 pairs"),
        ("peers.arena-hard-v0.1", "gpt-4-0613", "gpt-4-0314", 40.0, 1.5, 41.0, 38.0, 44.0, "identified"),
    ]  # fmt: skip
    frame = pd.DataFrame(
        [
            {
                "setting": s,
                "kind": "reference",
                "system": m,
                "baseline": b,
                "n": 805,
                "longer": 400,
                "shorter": 405,
                "win rate (ties half) %": w,
                "win rate SE": se,
                "LC win rate %": lc,
                "LC lower": lo,
                "LC upper": hi,
                "LC status": status,
            }
            for s, m, b, w, se, lc, lo, hi, status in rows
        ]
    )
    write_table(frame.set_index(["setting", "kind", "system", "baseline"]), [path])


@pytest.fixture
def peers_board(tmp_path):
    t = tmp_path
    _ratings(t / "arena_ratings.csv")
    _lc(t / "arena_length_controlled.csv")
    _arena_hard_scores(t / "arena_hard_scores.csv")
    drfr = {"judge": "gpt-4", "model": "gpt-4"}
    for label, value in (("Overall", 0.876), ("Easy", 0.9), ("Hard", 0.85)):
        drfr |= {label: value, f"{label}_lower": value - 0.01, f"{label}_upper": value + 0.01}
        drfr[f"{label}_n"] = 500
    pd.DataFrame([drfr]).to_csv(t / "drfr_table5_long.csv", index=False)
    write_json(t / "summary.json", validity_summary([]))
    board = build_leaderboard(
        t / "leaderboard",
        tables={
            "drfr_table5_long": t / "drfr_table5_long.csv",
            "arena_ratings": t / "arena_ratings.csv",
            "arena_length_controlled": t / "arena_length_controlled.csv",
            "arena_hard_scores": t / "arena_hard_scores.csv",
        },
        score_paths=[],
        validity_summary_path=t / "summary.json",
        systems_path=None,
        settings=LeaderboardSettings({}, (), rounds=10, seed=1, origins=leaderboard_origins(PEERS)),
        front_path=t / "at_a_glance.html",
    )
    return t, board


def test_released_judgments_say_their_benchmark_and_publisher(peers_board):
    """Each section is the benchmark the released judgments come from and each row's source says
    "released judgments" and the publisher -- not "RAG-QA Arena" and "model"; arena-hard's
    baseline is ranked among its models (its leaderboard lists it at 50), marked baseline."""
    t, board = peers_board
    md = (t / "leaderboard.md").read_text()
    titles = [b for b in md.split("\n\n") if b.endswith("(released judgments):")]
    assert titles == [
        "InFoBench (released judgments):",
        "AlpacaEval 2.0 (released judgments):",
        "Arena-Hard-Auto (released judgments):",
    ]
    assert "RAG-QA Arena" not in md and "| model " not in md
    cells = next(b for b in md.split("\n\n") if b.startswith("Cells: "))
    assert "LFRQA" not in cells and "QAGS" not in cells  # the notes of the columns it has
    caption = md.split("\n\n")[0]
    assert "the models the workflow runs" not in caption
    assert (
        "(the systems of released judgments (lmarena/arena-hard-auto), released judgments "
        in caption
    )
    assert board.loc["gpt-4", "source"] == "released judgments (qinyiwei/InFoBench)"
    assert board.loc["gpt-4-0613", "source"] == "released judgments (lmarena/arena-hard-auto)"
    assert (
        board.loc["gpt-4-0314", "source"]
        == "baseline; released judgments (lmarena/arena-hard-auto)"
    )
    assert board.loc["gpt-4-0314", "rank Arena-Hard score"] == "1 of 3"
    assert board.loc["gpt-3.5-turbo-0125", "rank Arena-Hard score"] == "3 of 3"
    assert board.loc["gpt-4-0613", "Arena-Hard score"] == "37.9 [35.4, 40.8] (n=500)"
    front = (t / "at_a_glance.html").read_text()
    assert "<h2>Arena-Hard-Auto (released judgments)</h2>" in front
    assert "<td>released judgments (tatsu-lab/alpaca_eval)</td>" in front
    assert "<td>model</td>" not in front


def test_the_arenas_ratings_of_arena_hards_battles_stay_off_the_board(peers_board):
    """The arena's tables read arena-hard's battles beside (origin ``shown`` False): the same
    fit would be a second ranked column of the section; the board shows its suite's score
    alone, and the rows' numbers hold no arena rating."""
    t, board = peers_board
    assert not [c for c in board.columns if c.startswith(("Bradley-Terry", "Elo", "arena "))]
    long = pd.read_csv(t / "leaderboard_long.csv")
    assert set(long[long["system"] == "gpt-4-0613"]["column"]) == {"Arena-Hard score"}


def test_alpaca_evals_systems_are_on_the_board_without_ratings(peers_board):
    """AlpacaEval's systems: the win rate against its baseline with +-1.96 of AlpacaEval's standard
    error, the LC win rate named by its GLM and "not identified" where the data do not decide it
    (no point estimate); no Bradley-Terry or Elo cell; the baseline a row marked baseline."""
    t, board = peers_board
    win, lc = "win % vs gpt4_1106_preview", "LC win % vs gpt4_1106_preview (noreg)"
    assert board.loc["m-long", win] == "60.0 [58.0, 62.0] (n=805)"
    assert board.loc["m-short", win] == "20.0 [19.0, 21.0] (n=805)"
    assert board.loc["m-long", lc] == "55.0 [52.0, 58.0] (n=805)"
    assert board.loc["m-short", lc] == "not identified"
    for system in ("m-long", "m-short"):
        assert not any(
            board.loc[system, c] for c in board.columns if c.startswith(("Bradley", "Elo"))
        )
        assert board.loc[system, "source"] == "released judgments (tatsu-lab/alpaca_eval)"
    base = board.loc["gpt4_1106_preview"]
    assert (base[win], base[lc], base["source"]) == (
        "baseline",
        "baseline",
        "baseline; released judgments (tatsu-lab/alpaca_eval)",
    )
    # arena-hard's LC row (battles, not soft preferences) gives no cell here
    assert not any(c.startswith("LC win % vs gpt-4-0314") for c in board.columns)
    long = pd.read_csv(t / "leaderboard_long.csv").set_index(["system", "column"])
    assert long.loc[("m-short", lc), "status"].startswith("not identified: ")
    assert pd.isna(long.loc[("m-short", lc), "value"])
    assert long.loc[("m-long", win), "se"] == 1.0
    md = (t / "leaderboard.md").read_text()
    assert "no Bradley-Terry" in md and "noreg" in md.split("AlpacaEval 2.0 (released")[1]
