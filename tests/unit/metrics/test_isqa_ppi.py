"""isqa_ppi: each factuality metric's mean beside the prediction-powered estimate of people's
factuality from the human evaluation's filled sheets, through the same PPI module as the arena's
and DRFR's tables (isqaflow.ppi)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from isqaflow.io import RecordError
from isqaflow.metrics.human import HumanEvalSample, run_sheets
from isqaflow.metrics.ppi_table import comparison_rows, human_factuality, isqa_ppi_table
from isqaflow.ppi import ppi_mean, ppi_paired_difference

SYSTEMS = ["baseline_2", "isqa-lora-human"]
ANNOTATORS = ["ann1", "ann2"]
PAPERS = 30


def _sentences(system: str, paper: int) -> str:
    return " ".join(f"{system} finding {k} of paper {paper}." for k in range(4))


def _factual(system: str, paper: int, index: int) -> int:
    """People's label: ISQA's summaries have fewer unfactual sentences (a fixed pattern)."""
    return int((paper + index + (system == "isqa-lora-human")) % 3 != 0)


def _evaluation(tmp_path: Path, sampled: int = 12) -> dict:
    """A human evaluation of ``sampled`` of 30 papers made by the workflow's own functions
    (run_sheets), its sheets filled with :func:`_factual`."""
    summaries = tmp_path / "summaries.jsonl"
    summaries.write_text(
        "".join(
            json.dumps(
                {"paper_id": f"p{i}", "system": s, "final": True, "summary": _sentences(s, i)}
            )
            + "\n"
            for i in range(PAPERS)
            for s in SYSTEMS
        )
    )
    sheets = {a: tmp_path / f"sheet-{a}.csv" for a in ANNOTATORS}
    run_sheets(
        [summaries],
        HumanEvalSample("qasper", tuple(SYSTEMS), papers=sampled, shared=2, seed=3),
        sheets,
        tmp_path / "key.csv",
        tmp_path / "assignment.json",
    )
    key = pd.read_csv(tmp_path / "key.csv", dtype=str).set_index("item_id")
    filled = {}
    for annotator, path in sheets.items():
        sheet = pd.read_csv(path, dtype=str, keep_default_na=False)
        sheet["factual"] = [
            str(
                _factual(
                    key.at[r.item_id, "system"],
                    int(key.at[r.item_id, "paper_id"][1:]),
                    int(r.sentence_index),
                )
            )
            for r in sheet.itertuples()
        ]
        filled[annotator] = tmp_path / f"filled-{annotator}.csv"
        sheet.to_csv(filled[annotator], index=False)
    return {
        "systems": SYSTEMS,
        "key": tmp_path / "key.csv",
        "assignment": tmp_path / "assignment.json",
        "filled": filled,
    }


def _scores(seed: int = 0) -> pd.DataFrame:
    """Final summaries' metric scores (x100, as load_scores gives them), noisy in the truth."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(PAPERS):
        for s in SYSTEMS:
            truth = np.mean([_factual(s, i, k) for k in range(1, 5)])
            rows.append(
                {
                    "dataset": "qasper",
                    "summarizer": "smollm2",
                    "system": s,
                    "paper_id": f"p{i}",
                    "final": True,
                    "qags": 100 * float(np.clip(0.3 + 0.5 * truth + rng.normal(0, 0.1), 0, 1)),
                    "questeval": 100 * float(rng.random()),
                }
            )
    return pd.DataFrame(rows)


def test_rows_are_the_ppi_module_on_the_same_inputs(tmp_path):
    entry = _evaluation(tmp_path)
    scores = _scores()
    table = isqa_ppi_table(scores, {"qasper/smollm2": entry})
    human = human_factuality(entry).set_index(["system", "paper_id"])["human"]
    assert len(human) == 24  # 12 papers x 2 systems
    judged = {}
    for system in SYSTEMS:
        mine = scores[scores["system"] == system].set_index("paper_id")["qags"] / 100
        labels = human.loc[system].reindex(mine.index).to_numpy()
        judged[system] = (mine.to_numpy(), labels)
        lab = ~np.isnan(labels)
        expected = ppi_mean(labels[lab], mine.to_numpy()[lab], mine.to_numpy()[~lab])
        row = table.loc[("qasper", "smollm2", "QAGS", system)]
        assert (row["n human"], row["N judged"], row["note"]) == (12, 30, "")
        assert row["PPI %"] == pytest.approx(100 * expected.ppi, abs=1e-12)
        assert row["PPI upper"] == pytest.approx(100 * expected.ppi_high, abs=1e-12)
        assert row["human %"] == pytest.approx(100 * expected.human, abs=1e-12)
        assert row["judge %"] == pytest.approx(100 * expected.judge, abs=1e-12)
    (qa, ha), (qb, hb) = judged["baseline_2"], judged["isqa-lora-human"]
    lab = ~np.isnan(ha)
    diff = ppi_paired_difference(ha[lab], hb[lab], qa[lab], qb[lab], qa[~lab], qb[~lab])
    row = table.loc[("qasper", "smollm2", "QAGS", "isqa-lora-human - baseline_2")]
    assert row["PPI %"] == pytest.approx(100 * diff.ppi, abs=1e-12)
    assert (row["PPI lower"], row["PPI upper"]) == pytest.approx(
        (100 * diff.ppi_low, 100 * diff.ppi_high), abs=1e-12
    )


def test_without_filled_sheets_the_rows_keep_the_metric_and_say_why(tmp_path):
    table = isqa_ppi_table(_scores(), {"qasper/smollm2": {"systems": SYSTEMS, "filled": {}}})
    assert len(table) == 6  # 2 metrics x (2 systems + their difference)
    assert (table["n human"] == 0).all() and table["PPI %"].isna().all()
    assert (table["note"] == "no filled human sheets (human_eval.filled: qasper/smollm2)").all()


def test_every_paper_in_the_human_sample_leaves_none_for_ppi(tmp_path):
    row = isqa_ppi_table(_scores(), {"qasper/smollm2": _evaluation(tmp_path, sampled=40)}).iloc[0]
    assert row["n human"] == 30 and np.isnan(row["PPI %"])
    assert row["note"] == "PPI needs at least 2 labelled and 2 unlabelled scored papers"


def test_a_bad_filled_sheet_is_named_by_file_line_and_field(tmp_path):
    entry = _evaluation(tmp_path)
    path = entry["filled"]["ann1"]
    sheet = pd.read_csv(path, dtype=str, keep_default_na=False)
    sheet.loc[2, "factual"] = "maybe"
    sheet.to_csv(path, index=False)
    with pytest.raises(RecordError, match="line 4.*field 'factual'") as caught:
        isqa_ppi_table(_scores(), {"qasper/smollm2": entry})
    assert str(path) in str(caught.value)


# coverage: the metric is kind to one system (a length bias, say): its difference misses, PPI's
# covers at its nominal rate (a Binomial(R, 0.95) count's 0.1%-99.9% range)
R, N, N_HUMAN = 400, 300, 80
LOW_COUNT, HIGH_COUNT = binom.ppf(0.001, R, 0.95), binom.isf(0.001, R, 0.95)


def test_ppi_covers_the_difference_where_a_biased_metric_alone_misses():
    rng = np.random.default_rng(5)
    true_a, true_b = 0.70, 0.75
    covered = {"judge": 0, "PPI": 0}
    for _ in range(R):
        rows, human = [], []
        sampled = set(rng.choice(N, N_HUMAN, replace=False))
        for system, mean, bias in (("a", true_a, 0.0), ("b", true_b, 0.08)):
            truth = rng.normal(mean, 0.15, N)  # people's factuality per paper
            metric = np.clip(truth + bias + rng.normal(0, 0.05, N), 0, 1)
            for i in range(N):
                rows.append(
                    {
                        "dataset": "d",
                        "summarizer": "s",
                        "system": system,
                        "paper_id": str(i),
                        "final": True,
                        "qags": 100 * metric[i],
                        "questeval": 100 * metric[i],
                    }
                )
                if i in sampled:
                    human.append({"paper_id": str(i), "system": system, "human": truth[i]})
        out = comparison_rows("d", "s", pd.DataFrame(rows), ["a", "b"], pd.DataFrame(human))
        row = next(r for r in out if r["system"] == "b - a" and r["metric"] == "QAGS")
        assert (row["n human"], row["N judged"]) == (N_HUMAN, N)
        for name in covered:
            # the truth: the mean difference of the population the papers are drawn from
            covered[name] += row[f"{name} lower"] <= 100 * (true_b - true_a) <= row[f"{name} upper"]
    assert covered["judge"] < 0.01 * R, covered
    assert LOW_COUNT <= covered["PPI"] <= HIGH_COUNT, (covered, LOW_COUNT, HIGH_COUNT)
