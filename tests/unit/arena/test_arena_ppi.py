"""The arena's PPI table (isqaflow.arena.ppi_table): human labels of the judged answers only,
PPI only on a random human sample, the reason otherwise."""

from __future__ import annotations

import csv

import numpy as np
import pandas as pd
import pytest

from isqaflow.arena.ppi_table import ppi_table
from isqaflow.ppi import NOT_RANDOM, ppi_mean

VERDICTS = ["1", "2", "tie", "1", "1", "2", "1", "tie", "1", "2"] * 4  # 40 queries
HUMAN = {
    0: "Better",
    1: "Worse",
    2: "Better",
    3: "Tie",
    4: "Better",
    5: "Slightly Worse",
    6: "Worse",
    7: "Tie",
}


def judged_records() -> pd.DataFrame:
    rows = []
    for q, verdict in enumerate(VERDICTS):
        for system in ("m1", "m2"):
            rows.append(
                {
                    "kind": "reference",
                    "domain": "fiqa",
                    "qid": q,
                    "system_a": system,
                    "system_b": "lfrqa",
                    "answer_a": f"{system} answer  to {q}",
                    "answer_b": f"reference {q}",
                    "verdict": verdict if system == "m1" else None if q == 0 else "2",
                }
            )
    rows.append(
        {
            "kind": "all_pairs",
            "domain": "fiqa",
            "qid": 0,
            "system_a": "m1",
            "system_b": "m2",
            "answer_a": "x",
            "answer_b": "y",
            "verdict": "1",
        }
    )  # not a reference pair
    return pd.DataFrame(rows)


def write_human(path) -> None:
    """m1 against the reference on queries 0-7 (query 3 with lfrqa first; query 7 labels another
    answer text, so it is not a label of the judged answer), three annotators agreeing."""
    fields = [
        "pair_id",
        "domain",
        "qid",
        "query",
        "system_1",
        "answer_1",
        "system_2",
        "answer_2",
        "annotator",
        "rating",
    ]
    flip = {"Better": "Worse", "Worse": "Better", "Slightly Worse": "Slightly Better", "Tie": "Tie"}
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        for q, rating in HUMAN.items():
            answer = f"m1 answer to {q}" if q != 7 else "an answer the judge never saw"
            sides = [("m1", answer), ("lfrqa", f"reference {q}")]
            if q == 3:
                sides, rating = sides[::-1], flip[rating]
            for annotator in ("a1", "a2", "a3"):
                writer.writerow(
                    {
                        "pair_id": f"p{q}",
                        "domain": "fiqa",
                        "qid": q,
                        "query": f"query {q}?",
                        "system_1": sides[0][0],
                        "answer_1": sides[0][1],
                        "system_2": sides[1][0],
                        "answer_2": sides[1][1],
                        "annotator": annotator,
                        "rating": rating,
                    }
                )


def test_a_random_human_sample_gets_the_ppi_estimate_of_the_judged_answers(tmp_path):
    human = tmp_path / "human.csv"
    write_human(human)
    table = ppi_table({"bm25-k5.local": judged_records()}, str(human), "lfrqa", "random")
    m1 = table.loc[("bm25-k5.local", "m1")]
    judge = np.array([{"1": 1.0, "tie": 0.5, "2": 0.0}[v] for v in VERDICTS])
    assert m1["N judged"] == 40 and m1["judge %"] == pytest.approx(100 * judge.mean())
    # queries 0-6 label the judged answer (whitespace aside); query 7 labels another text
    assert m1["n human"] == 7
    people = np.array([1.0, 0.0, 1.0, 0.5, 1.0, 0.0, 0.0])  # "Slightly Worse" merges to worse
    assert m1["human %"] == pytest.approx(100 * people.mean())
    expected = ppi_mean(people, judge[:7], judge[7:])
    assert m1["PPI %"] == pytest.approx(100 * expected.ppi)
    assert (m1["PPI lower"], m1["PPI upper"]) == pytest.approx(
        (100 * expected.ppi_low, 100 * expected.ppi_high)
    )
    assert m1["lambda"] == pytest.approx(expected.ppi_lambda) and m1["note"] == ""
    m2 = table.loc[("bm25-k5.local", "m2")]
    assert m2["N judged"] == 39  # query 0 has no valid verdict
    # m2 loses every judged pair: no spread, so no judge-only interval (a zero-width one would
    # read as certainty), and the note says so before the human labels' reason
    assert np.isnan(m2["judge lower"]) and np.isnan(m2["judge upper"])
    assert (
        np.isnan(m2["PPI %"])
        and m2["note"]
        == "every judged pair got 0: no interval (a zero-width one would read as certainty); "
        "no human label of this system's judged answers (the human pairs are of m1)"
    )
    # the judge-only interval of a preference stays inside [0, 100]
    assert (table["judge lower"].dropna() >= 0).all() and (
        table["judge upper"].dropna() <= 100
    ).all()


def test_the_judge_only_interval_is_cut_at_the_preference_bounds(tmp_path):
    """Before: 2 wins of 15 gave a normal interval from -1.2% (the embedded run's smollm2)."""
    human = tmp_path / "human.csv"
    write_human(human)
    rows = judged_records()
    rows = rows[(rows["system_a"] == "m2") & (rows["kind"] == "reference")].copy()
    rows["verdict"] = ["1", "1"] + ["2"] * (len(rows) - 2)
    m2 = ppi_table({"s": rows}, str(human), "lfrqa", "random").loc[("s", "m2")]
    assert m2["judge lower"] == 0.0 and 0 < m2["judge upper"] < 100


def test_a_chosen_human_sample_gets_no_ppi_estimate_and_says_why(tmp_path):
    human = tmp_path / "human.csv"
    write_human(human)
    table = ppi_table({"s": judged_records()}, str(human), "lfrqa", "chosen")
    m1 = table.loc[("s", "m1")]
    assert m1["n human"] == 7 and np.isnan(m1["PPI %"]) and m1["note"].startswith(NOT_RANDOM)
    assert not np.isnan(m1["judge %"])  # the judge-only estimate stays


def test_no_human_file_and_a_misspelled_sample_kind(tmp_path):
    table = ppi_table({"s": judged_records()}, None, "lfrqa", "random")
    assert (table["n human"] == 0).all() and table["note"].str.contains("no human label").all()
    with pytest.raises(ValueError, match="human_sample must be one of"):
        ppi_table({"s": judged_records()}, None, "lfrqa", "randomly")
