"""drfr_ppi: the judge's DRFR beside the prediction-powered estimate of people's DRFR, through
the same PPI module as the arena's win rates (isqaflow.ppi)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from isqaflow.arena.ppi_table import ppi_table as arena_ppi_table
from isqaflow.drfr.ppi_table import drfr_ppi_table
from isqaflow.io import write_jsonl
from isqaflow.ppi import NOT_RANDOM, ppi_mean


def _write(
    tmp_path: Path,
    judge: np.ndarray,
    human: np.ndarray,
    per_instruction: int = 4,
    responder: str = "mine",
    text: str = "the response",
) -> dict:
    """Files of one responder's judged questions (``judge`` 1 YES / 0 NO) and of people's labels
    (``human``: 1, 0, NaN where unlabelled): ``per_instruction`` questions per instruction."""
    n_instructions = len(judge) // per_instruction
    ids = [f"t{k}" for k in range(n_instructions)]
    judgments = [
        {
            "judge": "local",
            "model": responder,
            "instruction_id": ids[i // per_instruction],
            "question_index": i % per_instruction,
            "answer": "YES" if judge[i] else "NO",
        }
        for i in range(len(judge))
    ]
    labels = [
        {
            "id": iid,
            "decomposed_questions": [f"q{q}?" for q in range(per_instruction)],
            "output": text,
            "eval": [
                None if np.isnan(h) else bool(h)
                for h in human[k * per_instruction : (k + 1) * per_instruction]
            ],
        }
        for k, iid in enumerate(ids)
    ]
    responses = [{"instruction_id": iid, "model": responder, "response": text} for iid in ids]
    write_jsonl(tmp_path / "judgments.jsonl", judgments)
    write_jsonl(tmp_path / "labels.jsonl", labels)
    write_jsonl(tmp_path / "responses.jsonl", responses)
    return {
        "judgments": [tmp_path / "judgments.jsonl"],
        "labels": {responder: tmp_path / "labels.jsonl"},
        "responses": {responder: tmp_path / "responses.jsonl"},
        "sample": "random",
    }


def _example(seed: int = 1, n: int = 400, labelled: int = 80):
    rng = np.random.default_rng(seed)
    truth = (rng.random(n) < 0.6).astype(float)
    judge = np.where(truth == 1, rng.random(n) < 0.95, rng.random(n) < 0.5).astype(float)
    human = np.full(n, np.nan)
    picked = rng.choice(n, labelled, replace=False)
    human[picked] = truth[picked]
    return judge, human


def test_the_row_is_the_ppi_module_on_the_same_inputs(tmp_path):
    judge, human = _example()
    row = drfr_ppi_table({"infobench": _write(tmp_path, judge, human)}).loc[
        ("infobench", "local", "mine")
    ]
    labelled = ~np.isnan(human)
    expected = ppi_mean(human[labelled], judge[labelled], judge[~labelled])
    assert row["N judged"] == 400 and row["n human"] == 80 and row["note"] == ""
    assert row["judge %"] == pytest.approx(100 * expected.judge, abs=1e-12)
    assert row["human %"] == pytest.approx(100 * expected.human, abs=1e-12)
    assert row["PPI %"] == pytest.approx(100 * expected.ppi, abs=1e-12)
    assert (row["PPI lower"], row["PPI upper"]) == pytest.approx(
        (100 * expected.ppi_low, 100 * expected.ppi_high), abs=1e-12
    )
    assert row["lambda"] == pytest.approx(expected.ppi_lambda, abs=1e-12)
    assert 0 < row["lambda"] < 1


def test_the_row_equals_the_arenas_on_the_same_numbers(tmp_path):
    """A DRFR question judged YES/NO and an arena pair judged win/loss against the reference,
    people's labels the same: the two tables give the same numbers (one PPI module)."""
    judge, human = _example(seed=2, n=60, labelled=20)
    drfr = drfr_ppi_table({"infobench": _write(tmp_path, judge, human)}).iloc[0]
    records = pd.DataFrame(
        {
            "kind": "reference",
            "system_a": "mine",
            "system_b": "lfrqa",
            "domain": "fiqa",
            "qid": [f"q{i}" for i in range(60)],
            "answer_a": [f"answer {i}" for i in range(60)],
            "verdict": ["1" if j else "2" for j in judge],
        }
    )
    rows = []
    for i in np.flatnonzero(~np.isnan(human)):
        one, two = ("mine", "lfrqa") if i % 2 else ("lfrqa", "mine")
        better = (human[i] == 1) == (one == "mine")
        rows.append(
            {
                "pair_id": f"p{i}",
                "domain": "fiqa",
                "qid": f"q{i}",
                "query": f"query {i}",
                "system_1": one,
                "answer_1": f"answer {i}" if one == "mine" else "reference",
                "system_2": two,
                "answer_2": f"answer {i}" if two == "mine" else "reference",
                "annotator": "a",
                "rating": "better" if better else "worse",
            }
        )
    csv = tmp_path / "human.csv"
    pd.DataFrame(rows).to_csv(csv, index=False)
    arena = arena_ppi_table({"bm25": records}, str(csv), "lfrqa", "random").iloc[0]
    numbers = ["N judged", "judge %", "judge lower", "judge upper", "n human", "human %"]
    numbers += ["PPI %", "PPI lower", "PPI upper", "lambda"]
    for column in numbers:
        assert drfr[column] == pytest.approx(arena[column], abs=1e-12), column


# coverage: R seeded repetitions through the table; the PPI interval's count of covering the
# truth must lie where a Binomial(R, 0.95) count lies with probability 0.998, the judge's far below
R, N, N_HUMAN = 300, 600, 120
LOW_COUNT, HIGH_COUNT = binom.ppf(0.001, R, 0.95), binom.isf(0.001, R, 0.95)


def test_ppi_covers_at_its_nominal_rate_where_a_lenient_judge_alone_misses(tmp_path):
    """The judge says YES to 90% of the satisfied requirements and to 40% of the unsatisfied:
    its DRFR (~0.54 + 0.16 = 0.70 at a true 0.6) misses; PPI on 120 random labels covers."""
    rng = np.random.default_rng(40)
    truth_mean = 0.6
    covered = {"judge": 0, "PPI": 0}
    for _ in range(R):
        truth = (rng.random(N) < truth_mean).astype(float)
        judge = np.where(truth == 1, rng.random(N) < 0.9, rng.random(N) < 0.4).astype(float)
        human = np.full(N, np.nan)
        picked = rng.choice(N, N_HUMAN, replace=False)
        human[picked] = truth[picked]
        row = drfr_ppi_table({"d": _write(tmp_path, judge, human)}).iloc[0]
        for name in covered:
            covered[name] += row[f"{name} lower"] <= 100 * truth_mean <= row[f"{name} upper"]
    assert covered["judge"] < 0.01 * R, covered
    assert LOW_COUNT <= covered["PPI"] <= HIGH_COUNT, (covered, LOW_COUNT, HIGH_COUNT)


def test_a_chosen_subset_gets_no_ppi_estimate_and_says_why(tmp_path):
    judge, human = _example(seed=3, n=40, labelled=12)
    entry = {**_write(tmp_path, judge, human), "sample": "chosen"}
    row = drfr_ppi_table({"infobench": entry}).iloc[0]
    assert np.isnan(row["PPI %"]) and row["n human"] == 12 and row["N judged"] == 40
    assert row["note"] == NOT_RANDOM + " (datasets.instructions.infobench.human_sample: chosen)"
    assert row["judge %"] == pytest.approx(100 * judge.mean())


def test_labels_of_another_response_text_are_not_counted(tmp_path):
    judge, human = _example(seed=4, n=40, labelled=12)
    entry = _write(tmp_path, judge, human)
    write_jsonl(  # the responder answered something else than what people labelled
        entry["responses"]["mine"],
        [{"instruction_id": f"t{k}", "model": "mine", "response": "other"} for k in range(10)],
    )
    row = drfr_ppi_table({"infobench": entry}).iloc[0]
    assert row["n human"] == 0 and np.isnan(row["PPI %"])
    assert row["note"] == (
        "no human label of this responder's judged questions; "
        "12 labels of another response text not counted"
    )


def test_rows_without_labels_and_one_label_from_people_say_why(tmp_path):
    judge = np.array([1, 0, 1, 1, 1, 0, 1, 1], dtype=float)
    human = np.array([1, 1, np.nan, np.nan, 1, np.nan, np.nan, np.nan])
    entry = _write(tmp_path, judge, human)
    row = drfr_ppi_table({"infobench": entry}).iloc[0]
    # people said YES to all three: the judge gets no weight, PPI is the human mean, and a
    # zero-width interval is not reported as one
    assert row["PPI %"] == 100 and np.isnan(row["PPI lower"]) and row["lambda"] == 0
    assert row["note"] == (
        "people gave all 3 labelled judged questions one label (100) and the judge gets no "
        "weight (lambda 0): no PPI interval (a zero-width one would read as certainty)"
    )
    entry = {**entry, "labels": {}, "responses": {}}
    row = drfr_ppi_table({"infobench": entry}).iloc[0]
    assert row["note"] == "no human labels (datasets.instructions.infobench.human_labels)"
    assert drfr_ppi_table({}).empty
