"""Arena-Hard-Auto's style control on the workflow's own answers: each answer's counts (one
tokenizer for every answer, the baseline's included), the style-controlled score beside the
plain one in arena_hard_scores, a constant feature left out and named, and the caption."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from isqaflow.arena.ratings.style import markdown_counts
from isqaflow.arena_hard.style import answer_counts, read_counts, style_scores, write_counts
from isqaflow.arena_hard.tables import score_table, write_tables
from isqaflow.data.peers import read_arena_hard_answers, read_arena_hard_judgments
from isqaflow.io import read_jsonl, write_jsonl

REPO = Path(__file__).resolve().parents[3]
BASELINE = REPO / "data/embedded/arena_hard/model_answer/handwritten-baseline.jsonl"


def _answers(path: Path, model: str, texts: dict[str, str]) -> Path:
    write_jsonl(
        path,
        [
            {
                "uid": qid,
                "ans_id": f"{model}:{qid}",
                "model": model,
                "messages": [
                    {"role": "user", "content": "q"},
                    {"role": "assistant", "content": {"answer": text}},
                ],
            }
            for qid, text in texts.items()
        ],
    )
    return path


def _words(text: str) -> int:
    return len(text.split())


def test_every_answer_is_counted_with_one_tokenizer_the_baseline_included(tmp_path):
    qids = [obj["uid"] for _, obj in read_jsonl(BASELINE)]
    mine = _answers(tmp_path / "m.jsonl", "m", {q: f"# Head\n- one\n**{q}**" for q in qids})
    rows = answer_counts([BASELINE, mine], _words)
    assert len(rows) == 2 * len(qids)
    base = read_arena_hard_answers(BASELINE).table
    first = base.iloc[0]
    assert rows[0] == {
        "model": first["model"],
        "question_id": first["question_id"],
        "tokens": _words(first["answer"]),
        **markdown_counts(first["answer"]),
    }
    assert rows[-1]["headers"] == 1 and rows[-1]["lists"] == 1 and rows[-1]["bolds"] == 1


def test_the_tokenizer_is_a_models_own(tmp_path, tiny_causal):
    """write_counts loads only the model's tokenizer (transformers, offline) and counts without
    special tokens."""
    from transformers import AutoTokenizer

    out = tmp_path / "counts.jsonl"
    rows = write_counts([BASELINE], {"model": str(tiny_causal)}, out)
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_causal))
    text = read_arena_hard_answers(BASELINE).table.iloc[0]["answer"]
    assert rows[0]["tokens"] == len(tokenizer(text, add_special_tokens=False)["input_ids"])
    assert read_counts(out).shape == (len(rows), 6)


def test_a_counts_record_without_a_count_is_named(tmp_path):
    path = tmp_path / "c.jsonl"
    write_jsonl(path, [{"model": "m", "question_id": "q1", "tokens": 3, "headers": 0, "lists": 0}])
    with pytest.raises(ValueError, match=r"c.jsonl, line 1: no bolds"):
        read_counts(path)


def _judged(tmp_path, n=40, seed=0):
    """A length-loving judge: a verbose model beats the baseline mostly on length; a terse one
    loses mostly on length; their answers in arena-hard's formats with their counts."""
    rng = np.random.default_rng(seed)
    judgments, counts = [], []
    for q in range(n):
        base_len = int(rng.integers(100, 300))
        counts.append(
            dict(
                model="base",
                question_id=f"q{q}",
                tokens=base_len,
                headers=0,
                lists=int(rng.integers(0, 3)),
                bolds=0,
            )
        )
        for model, factor in (("long", 2.0), ("short", 0.5)):
            tokens = int(base_len * factor * rng.uniform(0.5, 2.0))
            counts.append(
                dict(
                    model=model,
                    question_id=f"q{q}",
                    tokens=tokens,
                    headers=0,
                    lists=int(rng.integers(0, 3)),
                    bolds=0,
                )
            )
            games = []
            for swapped in (False, True):
                x = (tokens - base_len) / (tokens + base_len + 1)  # the model's advantage
                wins = rng.random() < 1 / (1 + np.exp(-5 * x))
                # game 1: A = baseline, B = model; game 2 swapped
                games.append(
                    {"score": ("A>B" if wins else "B>A") if swapped else ("B>A" if wins else "A>B")}
                )
            judgments.append(
                {
                    "question_id": f"q{q}",
                    "model": model,
                    "judge": "j",
                    "games": [{"user_prompt": "", "judgment": "", **g} for g in games],
                }
            )
    path = tmp_path / "j.jsonl"
    write_jsonl(path, judgments)
    return path, pd.DataFrame(counts)


def test_the_style_score_sits_beside_the_plain_one_and_pulls_length_back(tmp_path):
    path, counts = _judged(tmp_path)
    table = score_table([path], ["j"], "base", 1, rounds=30, seed=1, style_counts=counts)
    rows = table.loc["j"]
    assert rows.loc["long", "score"] > 60 and rows.loc["short", "score"] < 40
    # read at equal style, both come back towards the baseline
    assert abs(rows.loc["long", "style score"] - 50) < abs(rows.loc["long", "score"] - 50)
    assert abs(rows.loc["short", "style score"] - 50) < abs(rows.loc["short", "score"] - 50)
    assert rows.loc["base", "style score"] == pytest.approx(50.0)
    assert (rows["style lower"] <= rows["style score"] + 1e-9).all()
    # headers and bolds never vary: left out and said
    assert table.attrs["style_left_out"] == {"j": ["headers", "bolds"]}
    battles = read_arena_hard_judgments(path, strong_weight=1, baseline="base").table
    fit = style_scores(battles, counts, "base", rounds=30, seed=1)
    assert rows.loc["long", "style score"] == pytest.approx(fit.scores.loc["long", "style score"])
    assert fit.left_out == ["headers", "bolds"] and fit.one_outcome == 0 and fit.interval_decided
    plain = score_table([path], ["j"], "base", 1, rounds=30, seed=1)
    assert plain["style score"].isna().all() and plain.attrs["style_left_out"] == {}
    np.testing.assert_allclose(plain["score"], table["score"])  # the plain score unchanged


def test_the_caption_says_what_style_control_did_or_that_it_is_off(tmp_path):
    qids = [obj["uid"] for _, obj in read_jsonl(BASELINE)]
    mine = _answers(tmp_path / "m.jsonl", "m", {q: "x " * (5 + i) for i, q in enumerate(qids)})
    judgments = tmp_path / "j.jsonl"
    write_jsonl(
        judgments,
        [
            {
                "question_id": q,
                "model": "m",
                "judge": "j",
                "games": [{"user_prompt": "", "judgment": "", "score": s} for s in g],
            }
            for q, g in zip(qids, [["B>A", "A>B"], ["A>B", "B>A"]] * len(qids), strict=False)
        ],
    )
    counts = tmp_path / "counts.jsonl"
    write_jsonl(counts, answer_counts([BASELINE, mine], _words))
    outs = [tmp_path / f"s.{ext}" for ext in ("csv", "md", "tex")]
    write_tables([judgments], ["j"], BASELINE, [mine], [], outs, 1, 20, 0, counts, "smollm2")
    caption = outs[1].read_text().split("\n\n")[0]
    assert "style score: the win rate against the baseline at equal style" in caption
    assert "tokens by smollm2's tokenizer, v0.1 counts cl100k_base" in caption
    assert "-- j: left out as constant over the battles: " in caption
    assert "style score" in pd.read_csv(outs[0]).columns
    write_tables([judgments], ["j"], BASELINE, [mine], [], outs, 1, 20, 0)
    assert "Style control: off" in outs[1].read_text()


def test_resamples_whose_battles_all_went_one_way_are_counted_and_decide_the_interval(tmp_path):
    """Eight battles (the embedded run's size): some bootstrap resamples hold only wins of one
    side and have no finite fit. They are left out and counted; above 2.5% of the resamples the
    interval is not reported (the rest would leave out exactly the extreme draws)."""
    # two games on each of 4 questions: "long" wins 6 of the 8 battles
    winners = [
        "model_b",
        "model_b",
        "model_b",
        "model_a",
        "model_b",
        "model_b",
        "model_a",
        "model_b",
    ]
    battles = pd.DataFrame(
        {
            "question_id": [f"q{i // 2}" for i in range(8)],
            "model_a": "base",
            "model_b": "long",
            "winner": winners,
        }
    )
    counts = pd.DataFrame(
        [
            dict(model=m, question_id=f"q{q}", tokens=t, headers=0, lists=q % 2, bolds=0)
            for q in range(4)
            for m, t in (("base", 100 + 10 * q), ("long", 200 + 40 * q))
        ]
    )
    fit = style_scores(battles, counts, "base", rounds=200, seed=0)
    assert fit.one_outcome > 0
    assert fit.interval_decided is (100 * fit.one_outcome / 200 <= 2.5)
    if not fit.interval_decided:
        assert fit.scores["style lower"].isna().all() and fit.scores["style upper"].isna().all()
        assert "no interval" in fit.note()
    assert f"{fit.one_outcome} of 200 resamples had battles of one outcome only" in fit.note()
    assert not np.isnan(fit.scores.loc["long", "style score"])
    one_way = battles.assign(winner="model_a")
    with pytest.raises(ValueError, match="every battle has the same outcome"):
        style_scores(one_way, counts, "base", rounds=10, seed=0)
