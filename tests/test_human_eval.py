from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest

from isqaflow.io import RecordError
from isqaflow.metrics.human import (
    annotator_agreement,
    build_sheet,
    cohen_kappa,
    read_filled_sheet,
    system_factuality,
    write_sheet,
)

SUMMARIES = [
    {"paper_id": "p1", "system": "A", "summary": "We study X. It beats Y. Code is public."},
    {"paper_id": "p1", "system": "B", "summary": "X is studied. It loses to Y."},
    {"paper_id": "p1", "system": "C", "summary": "A survey of X."},
    {"paper_id": "p2", "system": "A", "summary": "The data set is new."},
    {"paper_id": "p2", "system": "B", "summary": "A new data set.\nIt has 5 parts."},
    {"paper_id": "p2", "system": "C", "summary": "Nothing new here. Really."},
]


def test_build_sheet_splits_sentences_and_hides_systems():
    sheet, key = build_sheet(SUMMARIES, seed=0)
    assert list(sheet.columns) == ["item_id", "paper_id", "sentence_index", "sentence", "factual"]
    assert list(key.columns) == ["item_id", "paper_id", "system", "n_sentences"]
    assert len(key) == 6 and len(sheet) == 3 + 2 + 1 + 1 + 2 + 2
    assert "system" not in sheet.columns
    assert (sheet["factual"] == "").all()
    assert list(key["item_id"]) == ["s0001", "s0002", "s0003", "s0004", "s0005", "s0006"]
    # Papers stay together, in paper order; sentences are numbered from 1 per summary.
    assert list(key["paper_id"]) == ["p1"] * 3 + ["p2"] * 3
    system_a_p1 = key.loc[(key["paper_id"] == "p1") & (key["system"] == "A"), "item_id"].item()
    rows = sheet[sheet["item_id"] == system_a_p1]
    assert list(rows["sentence_index"]) == [1, 2, 3]
    assert list(rows["sentence"]) == ["We study X.", "It beats Y.", "Code is public."]
    assert dict(zip(key["system"] + key["paper_id"], key["n_sentences"])) == {
        "Ap1": 3,
        "Bp1": 2,
        "Cp1": 1,
        "Ap2": 1,
        "Bp2": 2,
        "Cp2": 2,
    }


def test_build_sheet_is_deterministic_and_shuffles_with_the_seed():
    sheet, key = build_sheet(SUMMARIES, seed=0)
    again_sheet, again_key = build_sheet(list(reversed(SUMMARIES)), seed=0)
    pd.testing.assert_frame_equal(sheet, again_sheet)
    pd.testing.assert_frame_equal(key, again_key)
    orders = {tuple(build_sheet(SUMMARIES, seed=seed)[1]["system"]) for seed in range(10)}
    assert len(orders) > 1  # the order of systems within a paper follows the seed


def test_build_sheet_rejects_incomplete_or_duplicated_summaries():
    with pytest.raises(ValueError, match="summary #0 lacks system"):
        build_sheet([{"paper_id": "p1", "summary": "Text."}])
    with pytest.raises(ValueError, match="two summaries"):
        build_sheet([SUMMARIES[0], SUMMARIES[0]])


def test_write_sheet_round_trips(tmp_path: Path):
    sheet, key = build_sheet(SUMMARIES, seed=0)
    write_sheet(sheet, key, tmp_path / "sheet.csv", tmp_path / "key.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["key.csv", "sheet.csv"]
    read_back = pd.read_csv(tmp_path / "sheet.csv", dtype=str, keep_default_na=False)
    assert list(read_back["sentence"]) == list(sheet["sentence"])
    assert list(pd.read_csv(tmp_path / "key.csv")["system"]) == list(key["system"])


def _write_csv(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    return path


HEADER = ["item_id", "paper_id", "sentence_index", "sentence", "factual"]


def test_read_filled_sheet_accepts_the_documented_spellings(tmp_path: Path):
    spellings = ["1", "0", "Yes", "no", "Y", "n", "TRUE", "false", "Factual", " non-factual "]
    rows = [
        ["s0001", "p1", str(i), f"Sentence {i}.", value] for i, value in enumerate(spellings, 1)
    ]
    path = _write_csv(tmp_path / "filled.csv", [HEADER + ["comment"], *[r + [""] for r in rows]])
    filled = read_filled_sheet(path, annotator="ann1")
    assert list(filled.columns) == HEADER + ["annotator"]
    assert list(filled["factual"]) == [1, 0] * 5
    assert filled["factual"].dtype.kind == "i"
    assert list(filled["sentence_index"]) == list(range(1, 11))
    assert set(filled["annotator"]) == {"ann1"}


def test_read_filled_sheet_names_line_item_and_field_of_a_bad_value(tmp_path: Path):
    rows = [
        HEADER,
        ["s0001", "p1", "1", "Fine.", "yes"],
        ["s0001", "p1", "2", "A sentence\nover two lines.", "no"],
        ["s0002", "p1", "1", "Unsure.", "maybe"],
    ]
    path = _write_csv(tmp_path / "filled.csv", rows)
    with pytest.raises(RecordError) as caught:
        read_filled_sheet(path, annotator="ann1")
    error = caught.value
    # Header is line 1, the quoted two-line sentence takes lines 3-4.
    assert (error.line, error.record, error.field) == (5, "s0002", "factual")
    assert error.file == str(path)
    assert "maybe" in str(error)


def test_read_filled_sheet_rejects_an_empty_judgment(tmp_path: Path):
    path = _write_csv(tmp_path / "filled.csv", [HEADER, ["s0001", "p1", "1", "Left blank.", ""]])
    with pytest.raises(RecordError) as caught:
        read_filled_sheet(path, annotator="ann1")
    assert (caught.value.line, caught.value.record, caught.value.field) == (2, "s0001", "factual")


def test_read_filled_sheet_names_a_missing_column(tmp_path: Path):
    path = _write_csv(tmp_path / "filled.csv", [HEADER[:-1], ["s0001", "p1", "1", "No column."]])
    with pytest.raises(RecordError) as caught:
        read_filled_sheet(path, annotator="ann1")
    assert caught.value.field == "factual"
    assert caught.value.file == str(path)
    assert "missing column 'factual'" in str(caught.value)


def _judgments(annotator: str, labels: dict[str, list[int]]) -> pd.DataFrame:
    rows = [
        {
            "item_id": item_id,
            "paper_id": "p",
            "sentence_index": index,
            "sentence": "",
            "factual": value,
            "annotator": annotator,
        }
        for item_id, values in labels.items()
        for index, value in enumerate(values, start=1)
    ]
    return pd.DataFrame(rows)


KEY = pd.DataFrame(
    {
        "item_id": ["s1", "s2", "s3", "s4"],
        "paper_id": ["p1", "p1", "p2", "p2"],
        "system": ["A", "B", "A", "B"],
    }
)


def test_system_factuality_on_a_hand_computed_example():
    # A: 2/3 and 1/1 factual -> (2/3 + 1) / 2 = 0.8333; B: 1/2 and 0/2 -> 0.25.
    filled = _judgments("ann1", {"s1": [1, 1, 0], "s2": [1, 0], "s3": [1], "s4": [0, 0]})
    result = system_factuality(filled, KEY)
    assert list(result.index) == ["A", "B"]
    assert result.loc["A", "factuality"] == pytest.approx(5 / 6)
    assert result.loc["B", "factuality"] == pytest.approx(0.25)
    assert result.loc["A", "n_summaries"] == 2 and result.loc["A", "n_sentences"] == 4
    assert result.loc["B", "n_sentences"] == 4 and result.loc["B", "n_annotators"] == 1
    # Two summaries: the resampled means are the two shares and their average.
    assert result.loc["A", "lower"] == pytest.approx(2 / 3)
    assert result.loc["A", "upper"] == pytest.approx(1.0)
    assert result.loc["B", "lower"] == 0.0 and result.loc["B", "upper"] == 0.5


def test_system_factuality_averages_annotators_per_summary_first():
    # On s1 ann1 says 2/3, ann2 says 1/3 -> 0.5; s3 only judged by ann1 -> 1.
    # System A: (0.5 + 1) / 2 = 0.75 (pooling the sentences would give 4/7).
    first = _judgments("ann1", {"s1": [1, 1, 0], "s3": [1]})
    second = _judgments("ann2", {"s1": [1, 0, 0]})
    result = system_factuality(pd.concat([first, second]), KEY)
    assert result.loc["A", "factuality"] == pytest.approx(0.75)
    assert result.loc["A", "n_summaries"] == 2
    assert result.loc["A", "n_sentences"] == 4 and result.loc["A", "n_judgments"] == 7
    assert result.loc["A", "n_annotators"] == 2


def test_system_factuality_rejects_items_missing_from_the_key():
    with pytest.raises(ValueError, match="'s9'"):
        system_factuality(_judgments("ann1", {"s9": [1]}), KEY)


def test_annotator_agreement_on_a_hand_computed_example():
    # Ten shared sentences, 7 agreements: p_o = 0.7.  ann1 says factual 6/10 times,
    # ann2 5/10: p_e = 0.6 * 0.5 + 0.4 * 0.5 = 0.5, kappa = (0.7 - 0.5) / 0.5 = 0.4.
    ann1 = _judgments("ann1", {"s1": [1, 1, 1, 1, 1], "s2": [1, 0, 0, 0, 0]})
    ann2 = _judgments("ann2", {"s1": [1, 1, 1, 1, 0], "s2": [0, 0, 0, 0, 1], "s3": [1]})
    ann3 = _judgments("ann3", {"s3": [1]})
    table = annotator_agreement(pd.concat([ann3, ann2, ann1]))
    assert list(zip(table["annotator_a"], table["annotator_b"])) == [
        ("ann1", "ann2"),
        ("ann1", "ann3"),
        ("ann2", "ann3"),
    ]
    first = table.iloc[0]
    assert first["n"] == 10
    assert first["agreement"] == pytest.approx(0.7)
    assert first["kappa"] == pytest.approx(0.4)
    # ann1 and ann3 share no sentence; ann2 and ann3 agree on the only one.
    assert table.iloc[1]["n"] == 0 and pd.isna(table.iloc[1]["kappa"])
    assert table.iloc[2]["n"] == 1 and table.iloc[2]["kappa"] == 1.0


def test_cohen_kappa_degenerate_cases():
    assert cohen_kappa([1, 1, 1], [1, 1, 1]) == 1.0  # p_e = 1 and p_o = 1
    assert cohen_kappa([1, 1, 1, 1], [1, 1, 1, 0]) == pytest.approx(0.0)  # p_e = p_o = 0.75
    assert cohen_kappa([1, 0, 1, 0], [0, 1, 0, 1]) == pytest.approx(-1.0)
