"""Arena-Hard's score table: Bradley-Terry against the baseline from the judgment files, as
arena-hard's show_result.py, or from its battles files; the released battles' published scores
reproduced through it (the peers' released judgments fill the same table)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from isqaflow.arena_hard.tables import BattleFile, score_table, win_rate_vs, write_tables
from isqaflow.io import read_jsonl, write_jsonl

REPO = Path(__file__).resolve().parents[3]
EMBEDDED = REPO / "data/embedded/arena_hard"
PYTHIA = (
    REPO.parent
    / "shared/data/peers/arena-hard/data/arena-hard-v0.1/model_judgment/gpt-4-1106-preview"
    / "Pythia-12B-DPO-UltraFeedback.jsonl"
)


def _judgments(path, scores):
    write_jsonl(
        path,
        [
            {
                "question_id": f"q{i}",
                "model": model,
                "judge": "j",
                "games": [{"user_prompt": "", "judgment": "", "score": s} for s in games],
            }
            for model, rows in scores.items()
            for i, games in enumerate(rows)
        ],
    )
    return path


def test_scores_are_win_rates_against_the_baseline(tmp_path):
    path = _judgments(
        tmp_path / "j.jsonl",
        {
            # strong: game 1 B>>A (model wins 3), game 2 A>>B (model wins 3) on each of 3 questions
            "strong": [["B>>A", "A>>B"]] * 3 + [["A>B", "B>A"]],
            "even": [["A=B", "A=B"]] * 4,
            "mute": [[None, None]] + [["A=B", "A=B"]] * 3,
        },
    )
    table = score_table([path], ["j"], "base", strong_weight=3, rounds=50, seed=1)
    rows = table.loc["j"]
    assert list(rows.index)[0] == "strong" and rows.loc["base", "score"] == pytest.approx(50.0)
    assert rows.loc["even", "score"] == pytest.approx(50.0, abs=0.1)
    assert rows.loc["strong", "lower"] <= rows.loc["strong", "upper"]
    assert rows.loc["strong", "battles"] == 3 * 6 + 2 and rows.loc["mute", "games_left_out"] == 2
    assert rows.loc["mute", "questions"] == 3
    one = score_table([path], ["j"], "base", strong_weight=1, rounds=50, seed=1).loc["j"]
    assert one.loc["strong", "battles"] == 3 * 2 + 2
    assert win_rate_vs(1000.0, 1000.0) == pytest.approx(50.0)
    with pytest.raises(ValueError, match="judgment files for"):
        score_table([path], [], "base", 3, 10, 0)


def test_the_tables_are_written_with_the_controls_in_the_caption(tmp_path):
    baseline = EMBEDDED / "model_answer/handwritten-baseline.jsonl"
    qids = [obj["uid"] for _, obj in read_jsonl(baseline)]
    judgments = _judgments(tmp_path / "j.jsonl", {"m": [["B>A", "A>B"]] * len(qids)})
    outs = [tmp_path / f"arena_hard_scores.{ext}" for ext in ("csv", "md", "tex")]
    write_tables([judgments], ["j"], baseline, [], [], outs, strong_weight=3, rounds=20, seed=0)
    text = outs[1].read_text()
    assert "handwritten-baseline" in text and "| m " in text.replace("|  m", "| m")
    assert all(p.is_file() for p in outs)


@pytest.mark.skipif(not PYTHIA.is_file(), reason="../shared/data/peers/arena-hard is absent")
def test_a_released_judgment_file_scores_through_the_same_table():
    table = score_table([PYTHIA], ["gpt-4-1106-preview"], "gpt-4-0314", 3, 20, 42)
    model = table.loc["gpt-4-1106-preview"].drop("gpt-4-0314")
    assert len(model) == 1 and 0.0 < float(model["score"].iloc[0]) < 50.0


def _battles(path, rows):
    write_jsonl(
        path,
        [{"question_id": q, "model_a": a, "model_b": b, "winner": w} for q, a, b, w in rows],
    )
    return path


def test_a_battles_file_and_a_judgments_file_of_one_judge_are_one_fit(tmp_path):
    """Files of one judge are one block (show_result.py fits a judge's models at once): a
    battles file's battles as released -- a battle written with the baseline second turned
    round --, its models' games_left_out unknown (NaN); a judgments file's games counted as
    before; the baseline named where no answers file gives it; the caption says how each file
    counts a strong verdict and whose judgments they are."""
    battles = _battles(
        tmp_path / "battles.jsonl",
        [
            ("q1", "base", "b", "model_b"),
            ("q1", "base", "b", "model_b"),
            ("q1", "base", "b", "model_b"),  # a strong verdict, repeated as released
            ("q2", "b", "base", "model_b"),  # the baseline second: it won
            ("q3", "base", "b", "tie"),
        ],
    )
    judgments = _judgments(tmp_path / "j.jsonl", {"m": [["A>B", "A>B"], [None, "A=B"]]})
    outs = [tmp_path / f"arena_hard_scores.{ext}" for ext in ("csv", "md", "tex")]
    table = write_tables(
        [battles, judgments],
        ["j", "j"],
        None,
        [],
        [],
        outs,
        [None, 3],
        rounds=20,
        seed=0,
        formats=["arena_hard_battles", "arena_hard_judgments"],
        baseline="base",
        style_off="no counts here",
        about="Released judgments of someone.",
    )
    rows = table.loc["j"]
    assert set(rows.index) == {"base", "b", "m"} and rows.loc["base", "score"] == 50.0
    assert (rows.loc["b", "battles"], rows.loc["b", "questions"]) == (5, 3)
    assert np.isnan(rows.loc["b", "games_left_out"]) and rows.loc["m", "games_left_out"] == 1
    assert rows.loc["m", "battles"] == 3 and rows.loc["base", "battles"] == 8
    # b won 3 of 5 battles and tied one: above the baseline; m won one game, lost one, tied one
    assert rows.loc["b", "score"] > 50.0
    assert rows.loc["m", "score"] == pytest.approx(50.0, abs=0.1)
    caption = outs[1].read_text().split("\n\n")[0]
    assert caption.startswith("Released judgments of someone. Arena-Hard-Auto: score")
    assert "a strong verdict counts 3 battle(s) in a judgments file; a battles file" in caption
    assert "Style control: off (no counts here)" in caption
    with pytest.raises(ValueError, match="no baseline"):
        write_tables(
            [battles], ["j"], None, [], [], outs, None, 5, 0, formats=["arena_hard_battles"]
        )


def test_a_battle_without_the_baseline_and_a_wrong_weight_are_named(tmp_path):
    other = _battles(tmp_path / "b.jsonl", [("q1", "base", "m", "tie"), ("q2", "m", "n", "tie")])
    with pytest.raises(ValueError, match=r"b.jsonl, line 2, record 'q2', field 'model_a'"):
        score_table([other], ["j"], "base", None, 5, 0, formats=["arena_hard_battles"])
    with pytest.raises(ValueError, match="takes no strong_weight"):
        BattleFile(str(other), "j", "arena_hard_battles", 3)
    with pytest.raises(ValueError, match="needs its strong_weight"):
        BattleFile(str(other), "j", "arena_hard_judgments", None)
    with pytest.raises(ValueError, match="is not one of"):
        BattleFile(str(other), "j", "battles", None)
    with pytest.raises(ValueError, match="1 judgment files for 2 formats"):
        score_table([other], ["j"], "base", 3, 5, 0, formats=["arena_hard_battles"] * 2)


ARENA_HARD = REPO.parent / "shared/data/peers/arena-hard"


def _published(model):
    path = ARENA_HARD / "leaderboard/arena_hard_leaderboard_20240731.csv"
    with path.open(newline="", encoding="utf-8") as handle:
        return next(row for row in csv.DictReader(handle) if row["model"] == model)


def test_the_released_judgments_give_the_published_scores_through_the_same_table(
    tmp_path, shared_data
):
    """The peers' released files as rule peer_arena_hard_tables reads them -- the battles file of
    gpt-4-0613 and gpt-3.5-turbo-0125 and Pythia's judgment file, one judge, with the three
    released answers files -- through write_tables: the published scores to 0.01 (the
    leaderboard's rounding), the intervals within 1 of the published (bootstrap noise, as
    docs/reproduction.md claims: v0.1's 100 rounds, its seed 42), the baseline's mean answer
    length; Pythia's battles do not move the two models' scores (each meets the baseline only)."""
    if not ARENA_HARD.is_dir():
        pytest.skip(f"the peers' released arena-hard files are not present ({ARENA_HARD})")
    answers = ARENA_HARD / "data/arena-hard-v0.1/model_answer"
    outs = [tmp_path / f"arena_hard_scores.{ext}" for ext in ("csv", "md", "tex")]
    battles = ARENA_HARD / "data/arena_hard_battles.jsonl"
    write_tables(
        [battles, PYTHIA],
        ["gpt-4-1106-preview"] * 2,
        None,
        [answers / f"{m}.jsonl" for m in ("gpt-4-0314", "gpt-4-0613", "gpt-3.5-turbo-0125")],
        [],
        outs,
        [None, 3],
        rounds=100,
        seed=42,
        formats=["arena_hard_battles", "arena_hard_judgments"],
        baseline="gpt-4-0314",
    )
    table = pd.read_csv(outs[0]).set_index("model")
    alone = score_table([battles], ["j"], "gpt-4-0314", None, 1, 42, formats=["arena_hard_battles"])
    for model in ("gpt-4-0613", "gpt-3.5-turbo-0125"):
        published = _published(model)
        row = table.loc[model]
        assert row["score"] == pytest.approx(float(published["score"]), abs=0.01)
        assert row["lower"] == pytest.approx(float(published["rating_q025"]), abs=1.0)
        assert row["upper"] == pytest.approx(float(published["rating_q975"]), abs=1.0)
        assert row["score"] == pytest.approx(alone.loc[("j", model), "score"], abs=1e-3)
        assert (row["questions"], row["judge"]) == (500, "gpt-4-1106-preview")
    assert table.loc["gpt-4-0314", "score"] == 50.0 and table.loc["gpt-4-0314", "baseline"]
    baseline_texts = [
        obj["messages"][-1]["content"]["answer"]
        for _, obj in read_jsonl(answers / "gpt-4-0314.jsonl")
    ]
    assert table.loc["gpt-4-0314", "answer_chars"] == pytest.approx(
        np.mean([len(t) for t in baseline_texts])
    )
    pythia = table.loc["Pythia-12B-DPO-UltraFeedback"]
    assert pythia["questions"] == 12 and np.isnan(pythia["answer_chars"])
    assert "a battles file (show_result.py's) is read as released" in outs[1].read_text()
