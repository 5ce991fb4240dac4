from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from isqaflow.drfr.aggregate import drfr_bootstrap, drfr_by_category, drfr_by_label, drfr_summary

# (instruction_id, subset, category, labels per question)
INSTRUCTIONS = [
    ("i1", "Easy", "Writing", [["Content"], ["Format"]]),
    ("i2", "Easy", "Math", [["Content", "Format"], ["Number"], ["Linguistic"]]),
    ("i3", "Hard", "Writing", [["Style"], ["Content"], ["Format", "Number"], ["Content"]]),
]
ANSWERS = {
    # m1: i1 all YES; i2 YES, NO, INVALID; i3 YES, NO, YES, YES -> 6 of 9 YES.
    "m1": [["YES", "YES"], ["YES", "NO", "INVALID"], ["YES", "NO", "YES", "YES"]],
    # m2: everything YES except one INVALID in i3 -> 8 of 9 YES.
    "m2": [["YES", "YES"], ["YES", "YES", "YES"], ["YES", "INVALID", "YES", "YES"]],
}


def _judgments() -> pd.DataFrame:
    rows = [
        {
            "model": model,
            "instruction_id": instruction_id,
            "subset": subset,
            "category": category,
            "question_index": index,
            "labels": labels,
            "answer": answer,
        }
        for model, per_instruction in ANSWERS.items()
        for (instruction_id, subset, category, questions), answers in zip(
            INSTRUCTIONS, per_instruction
        )
        for index, (labels, answer) in enumerate(zip(questions, answers))
    ]
    return pd.DataFrame(rows)


def test_drfr_summary_on_a_hand_computed_table():
    summary = drfr_summary(_judgments())
    assert list(summary.index) == ["m1", "m2"]
    m1, m2 = summary.loc["m1"], summary.loc["m2"]
    assert m1["drfr"] == pytest.approx(6 / 9)
    assert m1["drfr_easy"] == pytest.approx(3 / 5)  # i1: 2/2, i2: 1/3 (INVALID is a NO)
    assert m1["drfr_hard"] == pytest.approx(3 / 4)
    assert (m1["n_questions"], m1["n_yes"], m1["n_invalid"]) == (9, 6, 1)
    assert m1["invalid_rate"] == pytest.approx(1 / 9)
    assert m1["n_instructions"] == 3
    assert m1["strict_rate"] == pytest.approx(1 / 3)  # only i1 is all YES
    assert m2["drfr"] == pytest.approx(8 / 9)
    assert m2["drfr_easy"] == 1.0 and m2["drfr_hard"] == pytest.approx(3 / 4)
    assert (m2["n_yes"], m2["n_invalid"]) == (8, 1)
    assert m2["strict_rate"] == pytest.approx(2 / 3)


def test_drfr_summary_without_hard_questions_gives_nan():
    easy_only = _judgments().query("subset == 'Easy'")
    summary = drfr_summary(easy_only)
    assert summary.loc["m1", "drfr"] == pytest.approx(3 / 5)
    assert np.isnan(summary.loc["m1", "drfr_hard"])


def test_drfr_by_label_counts_a_question_toward_each_of_its_labels():
    table = drfr_by_label(_judgments())
    m1 = table.loc["m1"]
    assert list(m1.index) == ["Content", "Linguistic", "Style", "Format", "Number"]
    expected = {
        "Content": (3 / 4, 4),  # i1q0 Y, i2q0 Y, i3q1 N, i3q3 Y
        "Linguistic": (0.0, 1),  # i2q2 INVALID
        "Style": (1.0, 1),
        "Format": (1.0, 3),  # i1q1, i2q0 (Content+Format), i3q2 (Format+Number)
        "Number": (1 / 2, 2),  # i2q1 N, i3q2 Y
    }
    for label, (drfr, n) in expected.items():
        assert m1.loc[label, "drfr"] == pytest.approx(drfr)
        assert m1.loc[label, "n"] == n
    assert m1["n"].sum() == 11  # 9 questions, two of them with two labels
    assert table.loc[("m2", "Content"), "drfr"] == pytest.approx(3 / 4)  # i3q1 INVALID


def test_drfr_by_label_rejects_an_unknown_label():
    judgments = _judgments()
    judgments.at[0, "labels"] = ["Tone"]
    with pytest.raises(ValueError, match="'Tone'"):
        drfr_by_label(judgments)


def test_drfr_by_category():
    table = drfr_by_category(_judgments())
    assert table.loc[("m1", "Writing"), "drfr"] == pytest.approx(5 / 6)  # i1 2/2 + i3 3/4
    assert table.loc[("m1", "Writing"), "n"] == 6
    assert table.loc[("m1", "Math"), "drfr"] == pytest.approx(1 / 3)
    assert table.loc[("m2", "Math"), "drfr"] == 1.0
    assert table.loc[("m2", "Writing"), "drfr"] == pytest.approx(5 / 6)


def test_drfr_bootstrap_on_the_hand_computed_table():
    table = drfr_bootstrap(_judgments(), rounds=4000, seed=0)
    assert list(table.index) == [
        ("m1", "all"),
        ("m1", "Easy"),
        ("m1", "Hard"),
        ("m2", "all"),
        ("m2", "Easy"),
        ("m2", "Hard"),
    ]
    m1_all = table.loc[("m1", "all")]
    assert m1_all["drfr"] == pytest.approx(6 / 9)
    assert (m1_all["n_instructions"], m1_all["n_questions"]) == (3, 9)
    # Resampling three instructions gives i2 three times (ratio 1/3) or i1 three times
    # (ratio 1) each with probability 1/27 > 2.5%: those are the interval's ends.
    assert m1_all["lower"] == pytest.approx(1 / 3) and m1_all["upper"] == 1.0
    m1_easy = table.loc[("m1", "Easy")]
    assert m1_easy["drfr"] == pytest.approx(3 / 5)
    assert m1_easy["lower"] == pytest.approx(1 / 3) and m1_easy["upper"] == 1.0
    m1_hard = table.loc[("m1", "Hard")]  # one instruction: no variation
    assert m1_hard["drfr"] == m1_hard["lower"] == m1_hard["upper"] == 0.75
    assert table.loc[("m2", "Easy"), "lower"] == table.loc[("m2", "Easy"), "upper"] == 1.0
    overall = drfr_bootstrap(_judgments(), rounds=4000, seed=0, by=None)
    assert list(overall.index) == [("m1", "all"), ("m2", "all")]
    pd.testing.assert_frame_equal(overall, table.xs("all", level="subset", drop_level=False))


def _random_judgments(seed: int, n_instructions: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for number in range(n_instructions):
        subset = "Easy" if number % 2 else "Hard"
        for index in range(int(rng.integers(1, 6))):
            rows.append(
                {
                    "model": "m",
                    "instruction_id": f"i{number}",
                    "subset": subset,
                    "category": "c",
                    "question_index": index,
                    "labels": ["Content"],
                    "answer": rng.choice(["YES", "YES", "NO", "INVALID"]),
                }
            )
    return pd.DataFrame(rows)


def test_drfr_bootstrap_is_reproducible_and_contains_the_estimate():
    judgments = _random_judgments(5)
    table = drfr_bootstrap(judgments, seed=11)
    pd.testing.assert_frame_equal(table, drfr_bootstrap(judgments, seed=11))
    other = drfr_bootstrap(judgments, seed=12)
    assert not np.allclose(table[["lower", "upper"]], other[["lower", "upper"]])
    pooled = drfr_summary(judgments).loc["m", "drfr"]
    assert table.loc[("m", "all"), "drfr"] == pytest.approx(pooled)
    assert (table["lower"] < table["drfr"]).all() and (table["drfr"] < table["upper"]).all()
    assert table.loc[("m", "all"), "n_instructions"] == 40
    assert table.loc[("m", "Easy"), "n_instructions"] == 20


def test_bad_judgments_are_rejected():
    judgments = _judgments()
    with pytest.raises(ValueError, match="answer 'yes'"):
        drfr_summary(judgments.assign(answer=judgments["answer"].str.lower()))
    with pytest.raises(ValueError, match="judged twice"):
        drfr_summary(pd.concat([judgments, judgments.iloc[:1]], ignore_index=True))
    with pytest.raises(ValueError, match="lack the columns"):
        drfr_summary(judgments.drop(columns="subset"))
    with pytest.raises(ValueError, match="by must be"):
        drfr_bootstrap(judgments, by="category")
