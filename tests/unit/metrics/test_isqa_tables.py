"""The ISQA paper's Tables 1-4, the oracle table, the feedback statistics and Figure 3.

Synthetic score rows (as isqaflow.metrics.score writes them) whose means are worked
out by hand: paper i (0..6) of a system scores ``level + 0.02 * i + offset``, so the
mean over papers is ``level + 0.06 + offset`` and every paired difference between two
systems is the same on every paper (seven papers: enough for the sign-flip test).
"""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest

from isqaflow.io import write_jsonl
from isqaflow.isqa.summarize import SummaryRecord
from isqaflow.metrics import tables
from isqaflow.metrics.tables import (
    best_prompt,
    build_isqa_tables,
    feedback_statistics,
    load_scores,
    oracle_table,
    system_table,
    table1,
)

PAPERS = 7
ROUNDS = 500
SEED = 0
# (dataset, summarizer) -> offset added to every score
PAIRS = {("qasper", "smollm2"): 0.0, ("scimrc", "smollm2"): 0.02, ("qasper", "flan_t5"): 0.04}
# the level of each prompt per metric (before 0.02 * i + offset)
LEVELS = {
    "qags": {
        "baseline_1": 0.30,
        "baseline_2": 0.40,
        "prehoc_1": 0.31,
        "prehoc_2": 0.32,
        "prehoc_3": 0.33,
    },
    "questeval": {
        "baseline_1": 0.35,
        "baseline_2": 0.25,
        "prehoc_1": 0.36,
        "prehoc_2": 0.30,
        "prehoc_3": 0.28,
    },
    "rouge": {
        "baseline_1": 0.20,
        "baseline_2": 0.22,
        "prehoc_1": 0.18,
        "prehoc_2": 0.24,
        "prehoc_3": 0.21,
    },
}
for levels in LEVELS.values():
    levels["generic"] = 0.30
BEST_BASELINE = {"qags": "baseline_2", "questeval": "baseline_1", "rouge": "baseline_2"}
BEST_PREHOC = {"qags": "prehoc_3", "questeval": "prehoc_1", "rouge": "prehoc_2"}
# ISQA levels relative to the best baseline prompt: final (step 2) and step 1; step 0 is baseline_1
ISQA = {
    "isqa-lora-human": (0.10, 0.15),  # step 1 beats the final step: the oracle is higher
    "isqa-base-human": (0.05, 0.05),
    "isqa-lora-generated": (0.08, 0.07),
}
METRIC_LABELS = {"qags": "QAGS", "questeval": "QuestEval", "rouge": "ROUGE"}


def level(system: str, metric: str, step: int | None = None) -> float:
    if system in ISQA:
        if step == 0:
            return LEVELS[metric]["baseline_1"]
        final, step1 = ISQA[system]
        return LEVELS[metric][BEST_BASELINE[metric]] + (final if step == 2 else step1)
    return LEVELS[metric][system]


def expected_mean(
    system: str, metric: str, dataset: str, summarizer: str, step: int | None = None
) -> float:
    """x 100, as the tables report."""
    return 100 * (
        level(system, metric, step) + 0.02 * (PAPERS - 1) / 2 + PAIRS[(dataset, summarizer)]
    )


def score_rows() -> list[dict]:
    rows = []
    for (dataset, summarizer), offset in PAIRS.items():
        for i in range(PAPERS):
            paper = f"{dataset}-{i}"
            runs = [
                (s, None, True)
                for s in ("baseline_1", "baseline_2", "prehoc_1", "prehoc_2", "prehoc_3", "generic")
            ]
            runs += [(s, step, step == 2) for s in ISQA for step in (0, 1, 2)]
            for system, step, final in runs:
                record = SummaryRecord(
                    paper_id=paper,
                    dataset=dataset,
                    summarizer=summarizer,
                    system=system,
                    step=step,
                    final=final,
                    summary=f"{system} {step} summary of {paper}",
                    input_tokens=100,
                    new_tokens=20,
                )
                values = {m: level(system, m, step) + 0.02 * i + offset for m in LEVELS}
                rows.append(
                    {
                        **record.model_dump(),
                        "qags": values["qags"],
                        "qags_questions": 3,
                        "questeval": values["questeval"],
                        "questeval_precision": 0.5,
                        "questeval_recall": 0.5,
                        "questeval_v024": values["questeval"] - 0.01,
                        "precision_answerability": 0.5,
                        "recall_f1": 0.5,
                        "questions_generated": 4,
                        "rouge1": values["rouge"] + 0.05,
                        "rouge2": values["rouge"] - 0.1,
                        "rougeL": values["rouge"] + 0.05,
                        "rouge": values["rouge"],
                    }
                )
    return rows


@pytest.fixture(scope="module")
def score_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("scores")
    rows = score_rows()
    paths = []
    for dataset, summarizer in PAIRS:
        path = root / dataset / summarizer / "scores.jsonl"
        write_jsonl(
            path, [r for r in rows if r["dataset"] == dataset and r["summarizer"] == summarizer]
        )
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def scores(score_files):
    return load_scores(score_files)


def steps_records() -> dict[str, list[dict]]:
    def rec(paper, system, counts, note=None, dataset="qasper", summarizer="smollm2"):
        return {
            "paper_id": paper,
            "dataset": dataset,
            "n_qas": 0 if note else 6,
            "note": note,
            "final_summary": "s",
            "final_step": 2,
            "facts": [],
            "non_facts": [],
            "counts": counts,
            "steps": [],
            "summarizer": summarizer,
            "system": system,
        }

    return {
        "qasper/smollm2/isqa-lora-human.steps.jsonl": [
            rec("p0", "isqa-lora-human", {"fact": 3, "non_fact": 1, "unanswerable": 2, "added": 3}),
            rec("p1", "isqa-lora-human", {"fact": 2, "non_fact": 2, "unparsed": 1, "added": 4}),
            rec("p2", "isqa-lora-human", {}, note="no QA pairs: no feedback possible"),
        ],
        "qasper/smollm2/isqa-base-human.steps.jsonl": [
            rec("p0", "isqa-base-human", {"fact": 1, "added": 1}),
        ],
        "qasper/flan_t5/isqa-lora-human.steps.jsonl": [
            rec("p0", "isqa-lora-human", {"non_fact": 2, "added": 1}, summarizer="flan_t5"),
        ],
    }


@pytest.fixture(scope="module")
def steps_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("steps")
    paths = []
    for name, records in steps_records().items():
        write_jsonl(root / name, records)
        paths.append(root / name)
    return paths


# ----------------------------------------------------------------------------- loading


def test_load_scores_scales_by_100(scores):
    assert len(scores) == len(PAIRS) * PAPERS * (6 + 3 * len(ISQA))
    row = scores[
        (scores["paper_id"] == "qasper-1")
        & (scores["system"] == "baseline_2")
        & (scores["summarizer"] == "smollm2")
    ].iloc[0]
    assert row["qags"] == pytest.approx(42.0)
    assert row["questeval"] == pytest.approx(27.0)
    assert row["questeval_v024"] == pytest.approx(26.0)
    assert row["rouge"] == pytest.approx(24.0)
    assert (row["rouge1"], row["rouge2"], row["rougeL"]) == pytest.approx((29.0, 14.0, 29.0))
    assert row["qags_questions"] == 3  # counts are not scaled


def test_best_prompt(scores):
    df = tables.final_scores(scores)
    df = df[(df["dataset"] == "qasper") & (df["summarizer"] == "smollm2")]
    for metric in METRIC_LABELS:
        assert best_prompt(df, ("baseline_1", "baseline_2"), metric) == BEST_BASELINE[metric]
        assert best_prompt(df, ("prehoc_1", "prehoc_2", "prehoc_3"), metric) == BEST_PREHOC[metric]
    assert best_prompt(df, ("no_such_prompt",), "qags") is None


# ----------------------------------------------------------------------------- Table 1


@pytest.fixture(scope="module")
def t1(scores):
    return table1(scores, "isqa-lora-human", ROUNDS, SEED)


def test_table1_without_isqa_is_the_best_baseline_prompt_per_metric(t1):
    long, _ = t1
    assert set(zip(long["dataset"], long["summarizer"])) == set(PAIRS)
    assert len(long) == len(PAIRS) * 3 * 2
    without = long[long["condition"] == "w/o ISQA"]
    for row in without.itertuples():
        metric = next(m for m, label in METRIC_LABELS.items() if label == row.metric)
        assert row.system == BEST_BASELINE[metric]
        assert row.mean == pytest.approx(
            expected_mean(row.system, metric, row.dataset, row.summarizer)
        )
        assert row.lower <= row.mean <= row.upper and row.lower < row.upper
        assert row.n == PAPERS
    # the prompts of Appendix E.2 (pre-hoc) and generic feedback never stand for "without ISQA"
    assert set(without["system"]) == {"baseline_1", "baseline_2"}


def test_table1_with_isqa_is_the_final_step_with_a_paired_comparison(t1):
    long, _ = t1
    with_isqa = long[long["condition"] == "w/ ISQA"]
    assert set(with_isqa["system"]) == {"isqa-lora-human"}
    for row in with_isqa.itertuples():
        metric = next(m for m, label in METRIC_LABELS.items() if label == row.metric)
        final = expected_mean("isqa-lora-human", metric, row.dataset, row.summarizer, step=2)
        oracle = expected_mean("isqa-lora-human", metric, row.dataset, row.summarizer, step=1)
        assert oracle == pytest.approx(final + 5)
        assert row.mean == pytest.approx(final)  # never the best-of-steps oracle
        assert row.lower <= row.mean <= row.upper and row.lower < row.upper
        # ISQA = best baseline + 0.1 on every paper: diff 10 (x100), the same in every resample
        assert row.diff == pytest.approx(10.0)
        assert row.diff_lower == pytest.approx(10.0) and row.diff_upper == pytest.approx(10.0)
        assert (
            row.p_sign_flip == 2 / 2**PAPERS
        )  # exact: only the all-positive pattern and its mirror
        assert row.test == "exact"
        assert row.p_wilcoxon == pytest.approx(
            2 / 2**PAPERS
        )  # exact test, all differences positive
        assert row.n_paired == PAPERS
    assert long.loc[long["condition"] == "w/o ISQA", "diff"].isna().all()


def test_table1_wide(t1):
    _, wide = t1
    assert list(wide.index.names) == ["summarizer", "condition"]
    cell = wide.loc[("smollm2", "w/ ISQA"), ("qasper", "QAGS")]
    mean = expected_mean("isqa-lora-human", "qags", "qasper", "smollm2", step=2)
    # p = 2 / 2**7 = 0.016 unadjusted, but Holm over the table's 9 comparisons gives 9 x 0.016 = 0.14:
    # no dagger; the interval from 7 < 10 papers carries the small-n mark; n papers; q questions kept
    assert cell.startswith(f"{mean:.2f} [")
    assert re.fullmatch(r"\d+\.\d\d \[\d+\.\d\d, \d+\.\d\d\]\u2021 \(n=7, q=3\.0\)", cell)
    long, _ = t1
    tested = long["p_sign_flip"].notna()
    assert tested.sum() == 9 and list(long.loc[tested, "p_holm"]) == pytest.approx(
        [9 * 2 / 2**PAPERS] * 9
    )
    # the reference row has no test, so no dagger; no q outside QAGS
    assert wide.loc[("flan_t5", "w/o ISQA"), ("qasper", "QuestEval")] == (
        f"{expected_mean('baseline_1', 'questeval', 'qasper', 'flan_t5'):.2f} "
        + re.search(r"\[.*\]", wide.loc[("flan_t5", "w/o ISQA"), ("qasper", "QuestEval")]).group()
        + "\u2021 (n=7)"
    )


# ----------------------------------------------------------------------------- the oracle


def _cell_mean(cell: str) -> float:
    return float(cell.split(" ")[0])


def test_oracle_table_is_labelled_and_at_least_the_final_step(scores):
    systems = sorted(ISQA)
    oracle = oracle_table(scores, systems, ROUNDS, SEED)
    assert list(oracle.index.names) == ["dataset", "summarizer", "system", "metric"]
    assert list(oracle.columns) == ["ISQA (final step)", "oracle best-of-steps (not a result)"]
    assert len(oracle) == len(PAIRS) * len(systems) * 3
    for (dataset, summarizer, system, label), row in oracle.iterrows():
        metric = next(m for m, lab in METRIC_LABELS.items() if lab == label)
        final = _cell_mean(row["ISQA (final step)"])
        best = _cell_mean(row["oracle best-of-steps (not a result)"])
        assert final == pytest.approx(
            expected_mean(system, metric, dataset, summarizer, step=2), abs=0.006
        )
        assert best >= final
        expected_best = max(
            expected_mean(system, metric, dataset, summarizer, step=s) for s in (0, 1, 2)
        )
        assert best == pytest.approx(expected_best, abs=0.006)
    row = oracle.loc[("qasper", "smollm2", "isqa-lora-human", "QAGS")]
    assert _cell_mean(row["oracle best-of-steps (not a result)"]) == pytest.approx(
        _cell_mean(row["ISQA (final step)"]) + 5
    )


# ----------------------------------------------------------------------------- Tables 2-4


def _row(long: pd.DataFrame, dataset: str, summarizer: str, row: str, metric: str) -> pd.Series:
    hit = long[
        (long["dataset"] == dataset)
        & (long["summarizer"] == summarizer)
        & (long["row"] == row)
        & (long["metric"] == METRIC_LABELS[metric])
    ]
    assert len(hit) == 1
    return hit.iloc[0]


def test_table2_prehoc_row_is_the_best_prehoc_prompt(scores):
    long, wide = system_table(
        scores,
        {
            "pre-hoc prompt": ["prehoc_1", "prehoc_2", "prehoc_3"],
            "generic feedback": "generic",
            "ISQA": "isqa-lora-human",
        },
        "pre-hoc prompt",
        ROUNDS,
        SEED,
    )
    assert len(long) == len(PAIRS) * 3 * 3
    for dataset, summarizer in PAIRS:
        for metric in METRIC_LABELS:
            pre = _row(long, dataset, summarizer, "pre-hoc prompt", metric)
            assert pre["system"] == BEST_PREHOC[metric]
            assert pre["mean"] == pytest.approx(
                expected_mean(BEST_PREHOC[metric], metric, dataset, summarizer)
            )
            assert math.isnan(pre["diff"])
            generic = _row(long, dataset, summarizer, "generic feedback", metric)
            assert generic["mean"] == pytest.approx(
                expected_mean("generic", metric, dataset, summarizer)
            )
            assert generic["diff"] == pytest.approx(
                100 * (0.30 - LEVELS[metric][BEST_PREHOC[metric]])
            )
            isqa = _row(long, dataset, summarizer, "ISQA", metric)
            assert isqa["mean"] == pytest.approx(
                expected_mean("isqa-lora-human", metric, dataset, summarizer, 2)
            )
            assert isqa["diff"] == pytest.approx(isqa["mean"] - pre["mean"])
            assert isqa["n_paired"] == PAPERS
    assert list(wide.index.names) == ["dataset", "summarizer", "row"]
    assert list(wide.columns) == ["QAGS", "QuestEval", "ROUGE"]


def test_table3_one_row_per_feedback_model(scores):
    long, wide = system_table(
        scores, {f: f"isqa-{f}-human" for f in ("lora", "base")}, "lora", ROUNDS, SEED
    )
    for dataset, summarizer in PAIRS:
        for metric in METRIC_LABELS:
            lora = _row(long, dataset, summarizer, "lora", metric)
            base = _row(long, dataset, summarizer, "base", metric)
            assert lora["system"] == "isqa-lora-human" and base["system"] == "isqa-base-human"
            assert lora["mean"] == pytest.approx(
                expected_mean("isqa-lora-human", metric, dataset, summarizer, 2)
            )
            assert base["mean"] == pytest.approx(lora["mean"] - 5)
            assert base["diff"] == pytest.approx(-5.0) and math.isnan(lora["diff"])
    assert set(wide.index.get_level_values("row")) == {"lora", "base"}


def test_table4_human_vs_generated_questions(scores):
    long, _ = system_table(
        scores,
        {"model-generated": "isqa-lora-generated", "human-annotated": "isqa-lora-human"},
        "model-generated",
        ROUNDS,
        SEED,
    )
    for dataset, summarizer in PAIRS:
        for metric in METRIC_LABELS:
            gen = _row(long, dataset, summarizer, "model-generated", metric)
            human = _row(long, dataset, summarizer, "human-annotated", metric)
            assert gen["mean"] == pytest.approx(
                expected_mean("isqa-lora-generated", metric, dataset, summarizer, 2)
            )
            assert human["diff"] == pytest.approx(2.0)
            assert human["p_sign_flip"] == 2 / 2**PAPERS


def test_system_table_with_a_missing_system(scores):
    long, _ = system_table(
        scores, {"lora": "isqa-lora-human", "none": "isqa-none-human"}, "lora", ROUNDS, SEED
    )
    missing = long[long["row"] == "none"]
    assert len(missing) == len(PAIRS) * 3
    assert missing["mean"].isna().all() and (missing["n"] == 0).all()
    assert "diff" not in long.columns  # nothing to compare: no comparison columns at all


# ----------------------------------------------------------------------------- feedback statistics


def test_feedback_statistics_sums_counts(steps_files):
    stats = feedback_statistics(steps_files)
    assert list(stats.index.names) == ["dataset", "summarizer", "system"]
    lora = stats.loc[("qasper", "smollm2", "isqa-lora-human")]
    assert lora["papers"] == 3 and lora["no_feedback_possible"] == 1
    assert (
        lora["fact"],
        lora["non_fact"],
        lora["unanswerable"],
        lora["unparsed"],
        lora["added"],
    ) == (5, 3, 2, 1, 7)
    assert lora["duplicates_skipped"] == 5 + 3 - 7
    base = stats.loc[("qasper", "smollm2", "isqa-base-human")]
    assert (
        base["papers"],
        base["fact"],
        base["non_fact"],
        base["added"],
        base["duplicates_skipped"],
    ) == (1, 1, 0, 1, 0)
    flan = stats.loc[("qasper", "flan_t5", "isqa-lora-human")]
    assert (
        flan["non_fact"],
        flan["added"],
        flan["duplicates_skipped"],
        flan["no_feedback_possible"],
    ) == (2, 1, 1, 0)
    assert all(dtype.kind == "i" for dtype in stats.dtypes)
    assert feedback_statistics([]).empty


# ----------------------------------------------------------------------------- the rule's outputs

TABLES = [
    "table1",
    "table2",
    "table3",
    "table4",
    "oracle",
    "feedback_stats",
    "appendix_questeval_v024",
    "ppi",
]


@pytest.fixture(scope="module")
def built(score_files, steps_files, tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("tables")
    figure_dir = tmp_path_factory.mktemp("figures") / "nested"
    build_isqa_tables(
        score_files,
        steps_files,
        out_dir,
        figure_dir,
        main_feedback="lora",
        feedback_models=["lora", "base"],
        datasets=["qasper", "scimrc"],
        rounds=ROUNDS,
        seed=SEED,
        # no filled human sheets: isqa_ppi keeps each metric's mean and says why
        ppi={
            f"{d}/{s}": {"systems": ["baseline_2", "isqa-lora-human"], "filled": {}}
            for d, s in PAIRS
        },
    )
    return out_dir, figure_dir


def test_build_isqa_tables_writes_every_file(built):
    out_dir, figure_dir = built
    expected = {f"isqa_{t}.{ext}" for t in TABLES for ext in ("csv", "md", "tex")}
    expected |= {f"isqa_table{i}_long.csv" for i in range(1, 5)}
    assert {p.name for p in out_dir.iterdir()} == expected  # and no temporary files left behind
    for name in expected:
        assert (out_dir / name).stat().st_size > 0
    figures = {p.name for p in figure_dir.iterdir()}
    assert figures == {
        f"isqa_figure3_{d}.{ext}" for d in ("qasper", "scimrc") for ext in ("png", "svg")
    }
    for dataset in ("qasper", "scimrc"):
        assert (figure_dir / f"isqa_figure3_{dataset}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        svg = (figure_dir / f"isqa_figure3_{dataset}.svg").read_text()
        assert "<svg" in svg and "refinement step" in svg


def test_long_csvs_hold_the_numbers(built):
    out_dir, _ = built
    long1 = pd.read_csv(out_dir / "isqa_table1_long.csv")
    row = long1[
        (long1["dataset"] == "qasper")
        & (long1["summarizer"] == "smollm2")
        & (long1["condition"] == "w/ ISQA")
        & (long1["metric"] == "QAGS")
    ].iloc[0]
    assert row["system"] == "isqa-lora-human"
    assert row["mean"] == pytest.approx(
        expected_mean("isqa-lora-human", "qags", "qasper", "smollm2", 2)
    )
    assert row["diff"] == pytest.approx(10.0)
    baseline = long1[(long1["condition"] == "w/o ISQA") & (long1["metric"] == "QuestEval")]
    assert set(baseline["system"]) == {"baseline_1"}  # which prompt won is in the CSV
    long2 = pd.read_csv(out_dir / "isqa_table2_long.csv")
    assert set(long2.loc[long2["row"] == "pre-hoc prompt", "system"]) == set(BEST_PREHOC.values())
    long3 = pd.read_csv(out_dir / "isqa_table3_long.csv")
    assert set(long3["row"]) == {"lora", "base"}
    long4 = pd.read_csv(out_dir / "isqa_table4_long.csv")
    assert set(long4["row"]) == {"model-generated", "human-annotated"}


@pytest.mark.parametrize("table", TABLES)
def test_tex_uses_booktabs_and_escapes(built, table):
    out_dir, _ = built
    text = (out_dir / f"isqa_{table}.tex").read_text()
    for rule in (r"\toprule", r"\midrule", r"\bottomrule"):
        assert text.count(rule) == 1, rule
    assert re.search(r"(?<!\\)_", text) is None, "an unescaped underscore"
    assert "flan\\_t5" in text
    assert "('" not in text


@pytest.mark.parametrize("table", TABLES)
def test_markdown_has_plain_row_labels(built, table):
    out_dir, _ = built
    text = (out_dir / f"isqa_{table}.md").read_text()
    assert "('" not in text and '("' not in text
    assert re.search(r"\|\s*flan_t5\s*\|", text)
    header = next(line for line in text.splitlines() if line.startswith("|"))
    assert "summarizer" in header


def test_markdown_table1_cells(built):
    out_dir, _ = built
    text = (out_dir / "isqa_table1.md").read_text()
    assert text.startswith("Table 1: without vs with ISQA")
    mean = expected_mean("isqa-lora-human", "qags", "qasper", "smollm2", 2)
    line = next(line for line in text.splitlines() if "smollm2" in line and "w/ ISQA" in line)
    assert f"{mean:.2f} [" in line and "]\u2021 (n=7, q=3.0)" in line
    # the caption names the test and the correction behind the daggers, the small-n mark, what n and q are
    assert (
        "sign-flip permutation test" in text.splitlines()[0]
        and "no test below 6 papers" in text.splitlines()[0]
    )
    assert (
        "Holm-adjusted p < 0.05" in text.splitlines()[0]
        and "over the table's 9 tested" in text.splitlines()[0]
    )
    assert "\u2021 interval from fewer than 10 papers" in text.splitlines()[0]
    assert (
        "n = papers" in text.splitlines()[0] and "q = QAGS questions kept" in text.splitlines()[0]
    )
    header = next(line for line in text.splitlines() if line.startswith("|"))
    assert "qasper QAGS" in header and "scimrc ROUGE" in header


def test_markdown_oracle_and_feedback_stats(built):
    out_dir, _ = built
    oracle = (out_dir / "isqa_oracle.md").read_text()
    assert "oracle best-of-steps (not a result)" in oracle
    stats = (out_dir / "isqa_feedback_stats.md").read_text()
    line = next(
        line for line in stats.splitlines() if "smollm2" in line and "isqa-lora-human" in line
    )
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[:5] == ["qasper", "smollm2", "isqa-lora-human", "3", "1"]
    assert "." not in "".join(cells[3:])  # counts, written with digits=0


def test_markdown_marks_absent_cells_like_latex(built):
    out_dir, _ = built
    tex = (out_dir / "isqa_table1.tex").read_text()
    md = (out_dir / "isqa_table1.md").read_text()
    tex_line = next(line for line in tex.splitlines() if line.startswith("flan\\_t5 & w/o ISQA"))
    assert tex_line.count("--") == 3  # no scimrc scores for flan_t5
    md_line = next(line for line in md.splitlines() if "flan_t5" in line and "w/o ISQA" in line)
    assert "nan" not in md_line and md_line.count("--") == 3


# ----------------------------------------------------------------------------- n, intervals, significance


def test_cell_format():
    fmt = tables._fmt
    assert (
        fmt(57.1429, 42.0, 71.5, 3) == "57.14 [42.00, 71.50]\u2021 (n=3)"
    )  # below 10 papers: marked
    assert fmt(85.714, math.nan, math.nan, 1) == "85.71 (n=1)"  # one paper: no zero-width interval
    assert (
        fmt(60.0, 50.0, 70.0, 8, p_value=0.01, questions=2.25)
        == "60.00\u2020 [50.00, 70.00]\u2021 (n=8, q=2.2)"
    )
    assert fmt(60.0, 50.0, 70.0, 10, p_value=0.05) == "60.00 [50.00, 70.00] (n=10)"  # p < 0.05 only
    assert fmt(math.nan, math.nan, math.nan, 0) == "--"


def _small_scores(values: dict[str, list[float | None]], metric: str = "qags") -> pd.DataFrame:
    """Final rows of one (dataset, summarizer): system -> per-paper values (None = missing row)."""
    rows = []
    for system, per_paper in values.items():
        for i, value in enumerate(per_paper):
            if value is None:
                continue
            rows.append(
                {
                    "dataset": "qasper",
                    "summarizer": "smollm2",
                    "system": system,
                    "paper_id": f"p{i}",
                    "step": None,
                    "final": True,
                    "qags_questions": 0 if value != value else 2,
                    **{m: 50.0 for m in ("qags", "questeval", "rouge", "questeval_v024")},
                    metric: value,
                }
            )
    return pd.DataFrame(rows)


def test_one_paper_cell_has_no_interval_and_few_papers_no_test():
    scores = _small_scores(
        {
            "baseline_1": [80.0, None, None],
            "baseline_2": [70.0, None, None],
            "isqa-lora-human": [90.0, None, None],
        }
    )
    long, wide = table1(scores, "isqa-lora-human", ROUNDS, SEED)
    qags = long[long["metric"] == "QAGS"].set_index("condition")
    assert (qags["n"] == 1).all() and qags["lower"].isna().all() and qags["upper"].isna().all()
    assert math.isnan(qags.loc["w/ ISQA", "diff_lower"])  # nor for the one paired difference
    assert (
        math.isnan(qags.loc["w/ ISQA", "p_sign_flip"])
        and qags.loc["w/ ISQA", "test"] == "too few pairs"
    )
    assert wide.loc[("smollm2", "w/o ISQA"), ("qasper", "QAGS")] == "80.00 (n=1, q=2.0)"
    assert wide.loc[("smollm2", "w/ ISQA"), ("qasper", "QAGS")] == "90.00 (n=1, q=2.0)"


def test_no_dagger_without_a_significant_difference():
    # differences +1, -1, +1, -1, +1, -1, +2: mean 2/7, exact p far above 0.05
    base = [50.0 + i for i in range(7)]
    isqa = [b + d for b, d in zip(base, [1, -1, 1, -1, 1, -1, 2], strict=True)]
    scores = _small_scores({"baseline_1": base, "isqa-lora-human": isqa})
    long, wide = table1(scores, "isqa-lora-human", ROUNDS, SEED)
    row = long[(long["metric"] == "QAGS") & (long["condition"] == "w/ ISQA")].iloc[0]
    assert row.p_sign_flip > 0.05 and row.n_paired == 7
    assert "\u2020" not in wide.loc[("smollm2", "w/ ISQA"), ("qasper", "QAGS")]


def test_dagger_reads_the_holm_adjusted_p():
    """One significant comparison among three (QAGS differs, QuestEval and ROUGE do not): Holm
    gives 3 x 2/2**7 = 0.047 < 0.05, a dagger; with a second such family member it stays (the
    step-down); unadjusted p kept."""
    base = [50.0 + i for i in range(7)]
    scores = _small_scores({"baseline_1": base, "isqa-lora-human": [b + 1 for b in base]})
    long, wide = table1(scores, "isqa-lora-human", ROUNDS, SEED)
    qags = long[(long["metric"] == "QAGS") & (long["condition"] == "w/ ISQA")].iloc[0]
    assert qags.p_sign_flip == 2 / 2**7 and qags.p_holm == pytest.approx(3 * 2 / 2**7)
    assert "\u2020" in wide.loc[("smollm2", "w/ ISQA"), ("qasper", "QAGS")]
    assert "\u2020" not in wide.loc[("smollm2", "w/ ISQA"), ("qasper", "ROUGE")]


def test_best_prompt_compares_prompts_scored_on_the_same_number_of_papers():
    nan = float("nan")
    # baseline_2 has the higher mean, but only on the one paper where QAGS is defined
    scores = _small_scores({"baseline_1": [40.0, 50.0, 60.0], "baseline_2": [95.0, nan, nan]})
    assert best_prompt(scores, ("baseline_1", "baseline_2"), "qags") == "baseline_1"
    # with equal n the higher mean wins; ties keep the order given
    scores = _small_scores({"baseline_1": [40.0, 50.0], "baseline_2": [95.0, 10.0]})
    assert best_prompt(scores, ("baseline_1", "baseline_2"), "qags") == "baseline_2"
    scores = _small_scores({"baseline_1": [40.0, 50.0], "baseline_2": [50.0, 40.0]})
    assert best_prompt(scores, ("baseline_2", "baseline_1"), "qags") == "baseline_2"
    assert best_prompt(_small_scores({"baseline_1": [nan]}), ("baseline_1",), "qags") is None


def test_questeval_appendix_shows_both_definitions(scores):
    appendix = tables.questeval_appendix(scores, ROUNDS, SEED)
    assert list(appendix.index.names) == ["dataset", "summarizer", "system"]
    assert list(appendix.columns) == list(tables.QUESTEVAL_VARIANTS.values())
    finals = {"baseline_1", "baseline_2", "prehoc_1", "prehoc_2", "prehoc_3", "generic", *ISQA}
    assert len(appendix) == len(PAIRS) * len(finals)
    row = appendix.loc[("qasper", "smollm2", "generic")]
    paper = expected_mean("generic", "questeval", "qasper", "smollm2")
    assert row.iloc[0].startswith(f"{paper:.2f} [") and row.iloc[0].endswith("(n=7)")
    assert row.iloc[1].startswith(f"{paper - 1:.2f} [")  # the synthetic v0.2.4 score is 0.01 lower


def _qags_fails(score_files, steps_files, tmp_path) -> None:
    """The tables and figure where QAGS fails its known-answer control (6 of 7 own abstracts
    preferred: p = 0.0625) and QuestEval passes (7 of 7)."""
    controls = [
        {
            "instrument": instrument,
            "name": name,
            "scope": "qasper",
            "control": "other_abstract",
            "rule": "raw",
            "item": f"p{i}",
            "expected": "own",
            "outcome": "own" if i < correct else "other",
            "correct": i < correct,
            "chance": 0.5,
            "baseline_correct": None,
        }
        for instrument, name, correct in (("QAGS", "qags", 6), ("QuestEval", "questeval", 7))
        for i in range(7)
    ]
    write_jsonl(tmp_path / "controls.jsonl", controls)
    (tmp_path / "tables").mkdir()
    build_isqa_tables(
        score_files,
        steps_files,
        tmp_path / "tables",
        tmp_path / "figures",
        main_feedback="lora",
        feedback_models=["lora", "base"],
        datasets=["qasper"],
        rounds=ROUNDS,
        seed=SEED,
        control_paths=[tmp_path / "controls.jsonl"],
    )


def test_figure3_says_when_a_metric_cannot_rank_these_systems(score_files, steps_files, tmp_path):
    """Issue 40: a metric that fails its known-answer control says so across the top of the
    figure built on it; one that passes does not."""
    _qags_fails(score_files, steps_files, tmp_path)
    svg = (tmp_path / "figures/isqa_figure3_qasper.svg").read_text()
    assert "The QAGS qags cannot rank these systems" in svg
    assert "QuestEval questeval cannot rank" not in svg


def test_isqa_captions_open_with_the_cannot_rank_sentence(score_files, steps_files, tmp_path):
    """Issue 40: every table built on the metrics opens its caption with the failing metric's
    one sentence (as the figure, the arena's tables and the leaderboard do); the feedback
    statistics, built on the feedback models (no control recorded here), do not."""
    _qags_fails(score_files, steps_files, tmp_path)
    sentence = (
        "The QAGS qags cannot rank these systems: it did no better than chance on 1 of its 1 "
        "known-answer controls, so its numbers show what it said, not which system is better. "
    )
    for name in ("table1", "table2", "table3", "table4", "oracle", "appendix_questeval_v024"):
        caption = (tmp_path / f"tables/isqa_{name}.md").read_text().split("\n\n", 1)[0]
        assert caption.startswith(sentence), name
        assert "QuestEval questeval cannot rank" not in caption, name
    stats = (tmp_path / "tables/isqa_feedback_stats.md").read_text()
    assert "cannot rank" not in stats.split("\n\n", 1)[0]
