"""Arena-Hard's score table: Bradley-Terry against the baseline from the judgment files, as
arena-hard's show_result.py; the released battles' published scores reproduced through it."""

from __future__ import annotations

from pathlib import Path

import pytest

from isqaflow.arena_hard.tables import score_table, win_rate_vs, write_tables
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
