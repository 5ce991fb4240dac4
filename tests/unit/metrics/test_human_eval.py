from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from isqaflow.io import RecordError
from isqaflow.metrics.human import (
    HumanEvalSample,
    annotator_agreement,
    assign_papers,
    build_sheet,
    cohen_kappa,
    read_filled_sheet,
    run_results,
    run_sheets,
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


# ----------------------------------------------------------------------------- the paper's protocol
ANNOTATORS = ["ann1", "ann2", "ann3"]


def test_assign_papers_is_the_papers_protocol_by_default_values():
    ids = [f"p{i:02d}" for i in range(30)]
    assignment = assign_papers(
        ids, papers=20, shared=5, annotators=ANNOTATORS, seed=13, key="scimrc"
    )
    rows = assignment["papers"]
    assert (assignment["papers_available"], assignment["papers_sampled"], assignment["shared"]) == (
        30,
        20,
        5,
    )
    assert assignment["note"] is None and assignment["annotators"] == ANNOTATORS
    assert len({r["paper_id"] for r in rows}) == 20 and {r["paper_id"] for r in rows} <= set(ids)
    assert [r["shared"] for r in rows] == [True] * 5 + [False] * 15
    assert all(r["annotators"] == ANNOTATORS for r in rows[:5])
    # the other 15 are dealt out in turn: 5 each, one annotator per paper
    assert Counter(r["annotators"][0] for r in rows[5:]) == {"ann1": 5, "ann2": 5, "ann3": 5}
    assert all(len(r["annotators"]) == 1 for r in rows[5:])
    # seeded, independent of the input order, keyed by the dataset
    assert assign_papers(list(reversed(ids)), 20, 5, ANNOTATORS, 13, "scimrc") == assignment
    assert assign_papers(ids, 20, 5, ANNOTATORS, 14, "scimrc")["papers"] != rows
    assert assign_papers(ids, 20, 5, ANNOTATORS, 13, "qasper")["papers"] != rows


def test_assign_papers_takes_all_papers_when_there_are_fewer_and_says_so():
    assignment = assign_papers(
        ["a", "b", "c"], papers=20, shared=5, annotators=ANNOTATORS, seed=13, key="qasper"
    )
    assert sorted(r["paper_id"] for r in assignment["papers"]) == ["a", "b", "c"]
    assert assignment["papers_sampled"] == 3 and assignment["shared"] == 3
    assert all(r["shared"] and r["annotators"] == ANNOTATORS for r in assignment["papers"])
    assert assignment["note"] == (
        "3 papers available, fewer than the sample size 20: all taken; 3 shared papers instead of 5"
    )


def test_assign_papers_rejects_impossible_settings():
    with pytest.raises(ValueError, match="at least two distinct"):
        assign_papers(["a"], 2, 1, ["ann1"], 0, "d")
    with pytest.raises(ValueError, match="at least two distinct"):
        assign_papers(["a"], 2, 1, ["ann1", "ann1"], 0, "d")
    with pytest.raises(ValueError, match="0 <= shared <= papers"):
        assign_papers(["a"], 2, 3, ANNOTATORS, 0, "d")


def write_summaries(path: Path, papers: list[str], systems: list[str]) -> Path:
    rows = [
        {"paper_id": p, "system": s, "final": True, "summary": f"{s} says {p} is new. It works."}
        for p in papers
        for s in systems
    ]
    rows.append(
        {"paper_id": papers[0], "system": systems[0], "final": False, "summary": "An earlier step."}
    )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_run_sheets_writes_one_blind_sheet_per_annotator(tmp_path: Path):
    papers = [f"p{i}" for i in range(8)]
    summaries = write_summaries(
        tmp_path / "summaries.jsonl", papers, ["baseline_2", "isqa", "other"]
    )
    partial = tmp_path / "partial.jsonl"  # p8 lacks the ISQA summary: it cannot be sampled
    partial.write_text(
        json.dumps({"paper_id": "p8", "system": "baseline_2", "summary": "Only one."}) + "\n"
    )
    outs = {a: tmp_path / f"sheet-{a}.csv" for a in ANNOTATORS}
    sample = HumanEvalSample(
        dataset="toy", systems=("baseline_2", "isqa"), papers=6, shared=2, seed=13
    )
    n = run_sheets(
        [summaries, partial],
        sample,
        sheet_outs=outs,
        key_out=tmp_path / "key.csv",
        assignment_out=tmp_path / "assignment.json",
    )
    assignment = json.loads((tmp_path / "assignment.json").read_text())
    assert assignment["systems"] == ["baseline_2", "isqa"] and assignment["papers_available"] == 8
    assert assignment == {
        **assign_papers(papers, 6, 2, ANNOTATORS, 13, "toy"),
        "systems": ["baseline_2", "isqa"],
    }
    key = pd.read_csv(tmp_path / "key.csv", dtype=str)
    sampled = {r["paper_id"] for r in assignment["papers"]}
    assert set(key["paper_id"]) == sampled and set(key["system"]) == {"baseline_2", "isqa"}
    assert len(key) == 12  # 6 papers x 2 systems; no earlier step, no third system
    sheets = {a: pd.read_csv(path, dtype=str, keep_default_na=False) for a, path in outs.items()}
    # 6 papers x 2 systems x 2 sentences; the 2 shared papers' 8 sentences are on all three sheets
    assert n == 24 and sum(len(s) for s in sheets.values()) == 24 + 2 * 8
    papers_per_sheet = {"ann1": 2 + 2, "ann2": 2 + 1, "ann3": 2 + 1}  # shared + dealt in turn
    for annotator, sheet in sheets.items():
        mine = {r["paper_id"] for r in assignment["papers"] if annotator in r["annotators"]}
        assert set(sheet["paper_id"]) == mine and len(mine) == papers_per_sheet[annotator]
        assert "system" not in sheet.columns and (sheet["factual"] == "").all()
        assert set(sheet["item_id"]) == set(key.loc[key["paper_id"].isin(mine), "item_id"])


def test_the_human_eval_sample_from_the_rules_params():
    """HumanEvalSample (human_eval_sheets' settings object): the config's human_eval values and the seed."""
    from types import SimpleNamespace

    params = SimpleNamespace(
        systems=["baseline_2", "isqa"], papers=20, shared=5, annotators=ANNOTATORS, seed=13
    )
    sample = HumanEvalSample.from_rule(
        params, SimpleNamespace(dataset="qasper", summarizer="smollm2")
    )
    assert sample == HumanEvalSample(
        dataset="qasper", systems=("baseline_2", "isqa"), papers=20, shared=5, seed=13
    )


def fill(sheet_path: Path, out: Path, judge) -> Path:
    sheet = pd.read_csv(sheet_path, dtype=str, keep_default_na=False)
    sheet["factual"] = [judge(row) for row in sheet.itertuples()]
    sheet.to_csv(out, index=False)
    return out


def test_run_results_scores_systems_and_kappa_on_the_shared_papers(tmp_path: Path):
    papers = [f"p{i}" for i in range(5)]
    summaries = write_summaries(tmp_path / "summaries.jsonl", papers, ["baseline_2", "isqa"])
    outs = {a: tmp_path / f"sheet-{a}.csv" for a in ANNOTATORS}
    run_sheets(
        [summaries],
        HumanEvalSample(dataset="toy", systems=("baseline_2", "isqa"), papers=5, shared=2, seed=13),
        sheet_outs=outs,
        key_out=tmp_path / "key.csv",
        assignment_out=tmp_path / "assignment.json",
    )
    key = pd.read_csv(tmp_path / "key.csv", dtype=str)
    system = dict(zip(key["item_id"], key["system"]))
    # ann1 and ann2 judge ISQA's sentences factual and the baseline's not; ann3 flips the second sentences
    filled = {
        "ann1": fill(
            outs["ann1"],
            tmp_path / "f1.csv",
            lambda r: "yes" if system[r.item_id] == "isqa" else "no",
        ),
        "ann2": fill(
            outs["ann2"], tmp_path / "f2.csv", lambda r: "1" if system[r.item_id] == "isqa" else "0"
        ),
        "ann3": fill(
            outs["ann3"],
            tmp_path / "f3.csv",
            lambda r: str(int((system[r.item_id] == "isqa") != (r.sentence_index == "2"))),
        ),
    }
    run_results(
        tmp_path / "key.csv",
        tmp_path / "assignment.json",
        filled,
        seed=0,
        factuality_out=tmp_path / "factuality.csv",
        agreement_out=tmp_path / "agreement.csv",
    )
    factuality = pd.read_csv(tmp_path / "factuality.csv", index_col="system")
    assert (
        factuality.loc["isqa", "n_summaries"] == 5
        and factuality.loc["baseline_2", "n_summaries"] == 5
    )
    assert factuality.loc["isqa", "factuality"] > factuality.loc["baseline_2", "factuality"]
    agreement = pd.read_csv(tmp_path / "agreement.csv", keep_default_na=False)
    pairs = agreement.set_index(["annotator_a", "annotator_b"])
    # only the 2 shared papers count: 2 systems x 2 sentences each
    assert (
        pairs.loc[("ann1", "ann2"), "n"] == 8 and float(pairs.loc[("ann1", "ann2"), "kappa"]) == 1.0
    )
    # ann3 disagrees on every second sentence: p_o = 0.5, p_e = 0.5 -> kappa 0
    assert float(pairs.loc[("ann1", "ann3"), "kappa"]) == pytest.approx(0.0)
    light = agreement.iloc[-1]
    assert light["annotator_a"] == "all pairs (Light's kappa)" and light["n"] == 8
    assert float(light["kappa"]) == pytest.approx(1 / 3)


def test_run_results_rejects_a_sheet_that_is_not_the_annotators(tmp_path: Path):
    papers = [f"p{i}" for i in range(5)]
    summaries = write_summaries(tmp_path / "summaries.jsonl", papers, ["baseline_2", "isqa"])
    outs = {a: tmp_path / f"sheet-{a}.csv" for a in ANNOTATORS}
    run_sheets(
        [summaries],
        HumanEvalSample(dataset="toy", systems=("baseline_2", "isqa"), papers=5, shared=2, seed=13),
        sheet_outs=outs,
        key_out=tmp_path / "key.csv",
        assignment_out=tmp_path / "assignment.json",
    )
    args = (tmp_path / "key.csv", tmp_path / "assignment.json")
    kwargs = {"seed": 0, "factuality_out": tmp_path / "f.csv", "agreement_out": tmp_path / "a.csv"}
    wrong = fill(outs["ann2"], tmp_path / "wrong.csv", lambda r: "1")
    with pytest.raises(RecordError, match="not on ann1's sheet") as caught:
        run_results(*args, {"ann1": wrong}, **kwargs)
    assert caught.value.file == str(wrong) and caught.value.field == "item_id"
    partial = pd.read_csv(fill(outs["ann1"], tmp_path / "p.csv", lambda r: "1"), dtype=str).iloc[
        :-1
    ]
    partial.to_csv(tmp_path / "p.csv", index=False)
    with pytest.raises(RecordError, match="is not judged") as caught:
        run_results(*args, {"ann1": tmp_path / "p.csv"}, **kwargs)
    assert caught.value.field == "factual" and caught.value.record is not None
    with pytest.raises(RecordError, match="annotator 'ann9' is not one of"):
        run_results(
            *args, {"ann9": fill(outs["ann1"], tmp_path / "x.csv", lambda r: "1")}, **kwargs
        )
    with pytest.raises(ValueError, match="human_eval.filled"):
        run_results(*args, {}, **kwargs)
