"""Tests for judge–human agreement: label merging, majorities, Cohen's kappa, Pearson r."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import t as student_t

from isqaflow.arena.judging.agreement import (
    cohen_kappa,
    human_majority,
    judge_human_agreement,
    majority_vote,
    merge_rating,
    verdict_to_score,
)


@pytest.mark.parametrize(
    ("label", "merged"),
    [
        ("Better", 1),
        ("slightly better", 1),
        ("TIE", 0),
        (" Slightly Worse ", -1),
        ("worse", -1),
    ],
)
def test_merge_rating(label, merged):
    assert merge_rating(label) == merged


def test_merge_rating_rejects_unknown_label():
    with pytest.raises(ValueError, match="Much Better"):
        merge_rating("Much Better")


def test_majority_vote_strict_majority_or_tie():
    assert majority_vote([1, 1, -1]) == 1
    assert majority_vote([-1, 0, -1]) == -1
    assert majority_vote([0, 0, 0]) == 0
    assert majority_vote([1, 0, -1]) == 0  # no majority: a tie
    assert majority_vote([1, 1, -1, -1]) == 0  # half is not a majority


def test_human_majority_per_pair():
    ratings = pd.DataFrame(
        {
            "pair_id": ["p1"] * 3 + ["p2"] * 3 + ["p3"] * 3 + ["p4"] * 3,
            "rating": [
                *["Better", "Slightly Better", "Worse"],
                *["Tie", "Worse", "slightly worse"],
                *["Better", "Tie", "Worse"],
                *["TIE", "tie", "Better"],
            ],
        }
    )
    majority = human_majority(ratings)
    assert majority.to_dict() == {"p1": 1, "p2": -1, "p3": 0, "p4": 0}


def test_verdict_to_score():
    verdicts = ["1", "2", "tie", "Tie", None, np.nan]
    assert [verdict_to_score(v) for v in verdicts] == [1, -1, 0, 0, None, None]
    with pytest.raises(ValueError, match="3"):
        verdict_to_score("3")


def test_cohen_kappa_classic_two_by_two():
    # 50 items: both yes 20, A yes / B no 5, A no / B yes 10, both no 15.
    # p_o = 35/50 = 0.7; p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5; kappa = 0.2 / 0.5 = 0.4.
    a = ["yes"] * 20 + ["yes"] * 5 + ["no"] * 10 + ["no"] * 15
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa(b, a) == pytest.approx(0.4)


def test_cohen_kappa_perfect_and_degenerate_agreement():
    assert cohen_kappa([1, 0, -1, 1], [1, 0, -1, 1]) == 1.0
    assert cohen_kappa([0, 0, 0], [0, 0, 0]) == 1.0  # p_e = 1: defined as 1
    assert cohen_kappa([1, -1], [-1, 1]) == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="outside"):
        cohen_kappa([1, 2], [1, 1], labels=[1, 0, -1])


def test_judge_human_agreement_with_a_missing_verdict():
    human = pd.Series({"p1": 1, "p2": -1, "p3": 0, "p4": 1, "p5": -1, "p6": 0})
    judge = pd.Series({"p1": "1", "p2": "2", "p3": "1", "p4": None, "p5": "tie"})  # p6 absent

    result = judge_human_agreement(human, judge)

    # Compared pairs p1, p2, p3, p5: human [1, -1, 0, -1], judge [1, -1, 1, 0].
    # Deviations from the means (-1/4, 1/4): cross products sum to 9/4, squares to 11/4 each.
    r = 9 / 11
    t_statistic = r * math.sqrt(2) / math.sqrt(1 - r**2)
    assert result["n"] == 4
    assert result["n_judge_invalid"] == 2
    assert result["pearson_r"] == pytest.approx(r)
    assert result["pearson_p"] == pytest.approx(2 * student_t.sf(t_statistic, df=2))
    # p_o = 1/2; p_e = (1*2 + 2*1 + 1*1) / 16 = 5/16; kappa = (3/16) / (11/16).
    assert result["cohen_kappa"] == pytest.approx(3 / 11)
    assert result["accuracy"] == pytest.approx(0.5)
    assert result["human_distribution"] == pytest.approx({1: 0.25, 0: 0.25, -1: 0.5})
    assert result["judge_distribution"] == pytest.approx({1: 0.5, 0: 0.25, -1: 0.25})


def test_judge_human_agreement_constant_judge_has_undefined_correlation():
    human = pd.Series({"p1": 1, "p2": -1, "p3": 1})
    judge = pd.Series({"p1": "1", "p2": "1", "p3": "1"})
    result = judge_human_agreement(human, judge)
    assert math.isnan(result["pearson_r"]) and math.isnan(result["pearson_p"])
    assert result["accuracy"] == pytest.approx(2 / 3)
    assert result["cohen_kappa"] == pytest.approx(0.0)  # p_o = p_e = 2/3


def test_judge_human_agreement_rejects_judge_pairs_without_humans():
    with pytest.raises(ValueError, match="p9"):
        judge_human_agreement(pd.Series({"p1": 1}), pd.Series({"p1": "1", "p9": "2"}))


def test_fitted_tie_band_reproduces_the_human_ties():
    from isqaflow.arena.judging.verdicts import calibrated_side, fit_tie_band

    margins = [0.05, -0.3, 1.2, -0.8, 0.1, 2.0, -0.02, 0.6, float("nan")]
    human = [0, 0, 1, -1, 1, 1, 0, -1, 0]
    fit = fit_tie_band(margins, human)
    # 3 human ties among the 8 pairs with a margin: the band lies between the 3rd and 4th |margin|
    assert (fit["n"], fit["n_human_ties"], fit["n_judge_ties"]) == (8, 3, 3)
    assert fit["tie_band"] == pytest.approx((0.1 + 0.3) / 2)
    verdicts = [calibrated_side(m, fit["tie_band"]) for m in margins[:8]]
    assert verdicts.count("tie") == human[:8].count(0)
    # with tie_band 0 no pair with a non-zero margin is ever a tie
    assert [calibrated_side(m, 0.0) for m in margins[:8]].count("tie") == 0
    # no human tie: band 0; all ties: the largest |margin|; equal margins at the boundary: fewer ties
    assert fit_tie_band([0.5, -1.0], [1, -1])["tie_band"] == 0.0
    assert fit_tie_band([0.5, -1.0], [0, 0])["tie_band"] == 1.0
    tied = fit_tie_band([0.1, 0.3, 0.3, 2.0], [0, 0, 1, 1])
    assert tied["tie_band"] == pytest.approx(0.2) and tied["n_judge_ties"] == 1
    with pytest.raises(ValueError, match="human labels"):
        fit_tie_band([0.1], [2])


def test_agreement_table_adds_the_fitted_band(tmp_path):
    import json

    from isqaflow.arena.tables import agreement_table

    rows = []
    pairs = [("p1", 1, 2.0), ("p2", 0, 0.1), ("p3", -1, -1.5), ("p4", 0, -0.2), ("p5", 1, 0.9)]
    for pair_id, label, _ in pairs:
        rating = {1: "Better", 0: "Tie", -1: "Worse"}[label]
        for annotator in ("x", "y", "z"):
            rows.append(
                {
                    "pair_id": pair_id,
                    "domain": "d",
                    "qid": pair_id,
                    "query": "q?",
                    "system_1": "s1",
                    "answer_1": "a",
                    "system_2": "s2",
                    "answer_2": "b",
                    "annotator": annotator,
                    "rating": rating,
                }
            )
    human_csv = tmp_path / "human.csv"
    pd.DataFrame(rows).to_csv(human_csv, index=False)
    judged = tmp_path / "judged.jsonl"
    side = lambda m: "1" if m > 0 else "2"  # noqa: E731
    judged.write_text(
        "".join(
            json.dumps(
                {
                    "pair_id": p,
                    "judge": "local",
                    "rule": "calibrated",
                    "tie_band": 0.0,
                    "margin": m,
                    "verdict": side(m),
                }
            )
            + "\n"
            for p, _, m in pairs
        )
    )
    table = agreement_table(human_csv, [judged])
    assert list(table["rule"]) == [
        "calibrated",
        "calibrated, tie band fitted on these pairs",
        "calibrated, tie band fitted leave-one-out",
    ]
    assert list(table["tie band"])[:2] == [0.0, pytest.approx((0.2 + 0.9) / 2)]
    assert (
        list(table["judge tie %"]) == [0.0, 40.0, 40.0] and list(table["human tie %"]) == [40.0] * 3
    )
    assert list(table["accuracy %"]) == [60.0, 100.0, 100.0]
    # every row says whether it is in-sample; the configured band 0 was not fitted here
    assert list(table["sample"]) == [
        "configured",
        "in-sample: band fitted on these pairs",
        "out of sample: each pair under the band fitted on the others",
    ]
    # a configured band equal to the fitted one (the embedded default's) is marked in-sample too
    judged.write_text(
        "".join(
            json.dumps(
                {
                    "pair_id": p,
                    "judge": "local",
                    "rule": "calibrated",
                    "tie_band": 0.55,
                    "margin": m,
                    "verdict": side(m),
                }
            )
            + "\n"
            for p, _, m in pairs
        )
    )
    table = agreement_table(human_csv, [judged])
    assert table["sample"].iloc[0] == "in-sample: band fitted on these pairs (the configured band)"


def test_leave_one_out_tie_band_judges_each_pair_out_of_sample():
    """In sample the band 0.025 ties exactly the two human ties (4/4 right); left out, the pair
    at 0.03 meets the band fitted on the others, (0.02 + 0.04) / 2 = 0.03, and becomes a tie."""
    from isqaflow.arena.judging.verdicts import calibrated_side, fit_tie_band, loo_tie_band_sides

    margins, human = [0.01, 0.02, 0.03, 0.04], [0, 0, 1, 1]
    band = fit_tie_band(margins, human)["tie_band"]
    assert [calibrated_side(m, band) for m in margins] == ["tie", "tie", "a", "a"]
    assert loo_tie_band_sides(margins, human) == ["tie", "tie", "tie", "a"]
