"""ROUGE (isqaflow.text.rouge): equal to the rouge-score package with stemming."""

from __future__ import annotations

import math

import pytest

from isqaflow.text.rouge import mean_rouge, rouge

NAN = float("nan")


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


# ----------------------------------------------------------------------------- ROUGE

ROUGE_PAIRS = [
    ("the cat sat on the mat", "the cat lay on the mat"),
    ("running dogs", "dogs run"),
    (
        "The model writes a summary of the paper's results.",
        "A summary of results is written by the model.",
    ),
    ("Facts and non-facts help the summarizer.", "The summarizer is helped by facts."),
    ("completely unrelated words", "nothing in common here"),
]


@pytest.mark.parametrize(("prediction", "reference"), ROUGE_PAIRS)
def test_rouge_equals_rouge_score_with_stemming(prediction, reference):
    from rouge_score import rouge_scorer

    expected = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True).score(
        reference, prediction
    )
    got = rouge(prediction, reference)
    assert set(got) == {"rouge1", "rouge2", "rougeL", "rouge"}
    for name in ("rouge1", "rouge2", "rougeL"):
        assert got[name] == pytest.approx(expected[name].fmeasure)
    assert got["rouge"] == pytest.approx((got["rouge1"] + got["rouge2"] + got["rougeL"]) / 3)


def test_rouge_by_hand():
    # prediction: the cat sat on the mat / reference: the cat lay on the mat (6 tokens each)
    # unigrams in common: the x2, cat, on, mat = 5 -> P = R = 5/6
    # bigrams (5 each) in common: "the cat", "on the", "the mat" = 3 -> P = R = 3/5
    # LCS: the cat on the mat = 5 -> 5/6
    got = rouge("the cat sat on the mat", "the cat lay on the mat")
    assert got["rouge1"] == pytest.approx(5 / 6)
    assert got["rouge2"] == pytest.approx(3 / 5)
    assert got["rougeL"] == pytest.approx(5 / 6)
    assert got["rouge"] == pytest.approx((5 / 6 + 3 / 5 + 5 / 6) / 3)
    # stemming: "running dogs" -> run dog; "dogs run" -> dog run; both unigrams shared,
    # no bigram shared, LCS of length 1 over 2 tokens
    stemmed = rouge("running dogs", "dogs run")
    assert (stemmed["rouge1"], stemmed["rouge2"], stemmed["rougeL"]) == pytest.approx(
        (1.0, 0.0, 0.5)
    )
    assert stemmed["rouge"] == pytest.approx(0.5)


def test_rouge_of_empty_prediction_is_zero():
    assert rouge("", "the cat lay on the mat") == {
        "rouge1": 0.0,
        "rouge2": 0.0,
        "rougeL": 0.0,
        "rouge": 0.0,
    }


def test_mean_rouge():
    preds = ["the cat sat on the mat", "running dogs"]
    refs = ["the cat lay on the mat", "dogs run"]
    got = mean_rouge(preds, refs)
    assert got["rouge1"] == pytest.approx((5 / 6 + 1.0) / 2)
    assert got["rouge2"] == pytest.approx((3 / 5 + 0.0) / 2)
    assert got["rouge"] == pytest.approx(((5 / 6 + 3 / 5 + 5 / 6) / 3 + 0.5) / 2)
    assert all(math.isnan(v) for v in mean_rouge([], []).values())
    with pytest.raises(ValueError):
        mean_rouge(["a"], [])
