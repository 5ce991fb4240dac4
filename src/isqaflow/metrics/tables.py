"""The ISQA paper's Tables 1-4 and Figure 3 from the scored summaries, with what the paper lacks.

All scores are x 100, as in the paper.  Every cell is a mean over papers with its
95% bootstrap confidence interval over papers and its number of papers n (a cell of
one paper has no interval); QAGS cells add q, the mean number of questions kept per
summary; an interval from fewer than :data:`isqaflow.stats.SMALL_N` papers carries a
double dagger (it covers far less than 95%).  Comparisons against a table's reference row
add, on the papers both have, the mean difference with its paired-bootstrap interval, the
exact sign-flip permutation test (its p-value, Holm-adjusted over the table's tested
comparisons, marks a cell with a dagger at p < 0.05; both p-values in the long CSV; no test
below 6 papers) and a Wilcoxon signed-rank test (also no p-value below 6 papers).

* Table 1 -- summarizers x datasets x {QAGS, QuestEval, ROUGE}, without vs with
  ISQA.  "Without" is, per metric, the best of the baseline prompts (Appendix E.1),
  as the paper reports; which prompt won is in the CSV.
* Table 2 -- pre-hoc prompt (best of Appendix E.2 per metric) vs generic feedback
  vs ISQA.
* Table 3 -- ISQA with each feedback model (human questions).
* Table 4 -- ISQA with human vs model-generated questions (the main feedback model).
* Figure 3 -- QAGS and QuestEval per refinement step, one line per summarizer, per
  dataset.
* The best-of-steps selection of the authors' public code is an oracle (it looks at
  the test metric); it is reported only in its own, labelled table.
* Feedback statistics -- what the feedback model's replies became (facts, non-facts,
  unanswerable, unparsed, near-duplicates) per run, and the steps without feedback
  (:mod:`isqaflow.metrics.identical`).
* Tables 1-4 say in their captions which ISQA variants' final summaries are identical texts
  (to each other or to their first summary s_1) and which had no feedback at all.
* Appendix -- QuestEval as the paper defines it (harmonic mean) beside the public
  v0.2.4 code's arithmetic variant (``questeval_v024``), for every final summary.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from isqaflow.io import read_jsonl
from isqaflow.isqa.prompts import BASELINE_PROMPTS, PREHOC_PROMPTS
from isqaflow.metrics.identical import feedback_use, identity_note, read_refinements
from isqaflow.metrics.ppi_table import isqa_ppi_table, ppi_caption
from isqaflow.stats import (
    MIN_PAIRS_FOR_TEST,
    SMALL_N,
    SMALL_N_MARK,
    bootstrap_ci,
    holm,
    paired_bootstrap,
    sign_flip_test,
    small_n_note,
    wilcoxon_signed_rank,
)
from isqaflow.report.figures import caveat, new_figure, save_figure
from isqaflow.report.tables import table_paths, write_table
from isqaflow.suites.isqa import FEEDBACK_MODEL, QAGS, QUESTEVAL
from isqaflow.report.validity import (
    cannot_rank,
    read_control_records,
    validity_note,
    validity_summary,
)

log = logging.getLogger(__name__)

METRICS = {"qags": "QAGS", "questeval": "QuestEval", "rouge": "ROUGE"}
QUESTEVAL_VARIANTS = {
    "questeval": "QuestEval (paper: harmonic mean)",
    "questeval_v024": "QuestEval v0.2.4 (arithmetic mean, no BERTScore)",
}
SIGNIFICANCE = 0.05
DAGGER = "\u2020"
CELL_NOTE = (
    "mean [95% bootstrap CI] over papers, x100; n = papers (one paper: no interval); "
    "q = QAGS questions kept per summary (mean); " + small_n_note("papers")
)


def qa_metric_note(scores: pd.DataFrame) -> str:
    """What QAGS and QuestEval withheld and padded, and the spread of QAGS's source answerability
    (per summary, the mean over its questions): a reader saturated near 1 cannot tell texts apart."""
    if scores.empty or "qags_copies_excluded" not in scores:
        return ""
    numeric = lambda column: pd.to_numeric(scores[column], errors="coerce")  # noqa: E731
    parts = [
        f"answers withheld as spans of their own question: QAGS {int(numeric('qags_copies_excluded').sum())}, "
        f"QuestEval {int(numeric('questeval_copies_excluded').sum())} over {len(scores)} summary records"
    ]
    if "qags_questions" in scores:
        parts.append(
            f"QAGS kept a question that passed its filters for {int((numeric('qags_questions') > 0).sum())} "
            f"of {len(scores)}"
        )
    if "qags_padded" in scores:
        parts.append(f"QAGS questions padded to K: {int(numeric('qags_padded').sum())}")
    answerability = numeric("qags_source_answerability").dropna()
    if len(answerability):
        q1, median, q3 = answerability.quantile([0.25, 0.5, 0.75])
        parts.append(
            f"QAGS source answerability per summary: median {median:.2f} [IQR {q1:.2f}-{q3:.2f}], "
            f"min {answerability.min():.2f}, {int((answerability < 0.5).sum())} of {len(answerability)} "
            "below 0.5"
        )
    return " " + "; ".join(parts) + "."


def significance_note(reference: str, long: pd.DataFrame | None = None) -> str:
    """The caption sentence that names the test and the correction behind the daggers."""
    tested = (
        0 if long is None or "p_sign_flip" not in long else int(long["p_sign_flip"].notna().sum())
    )
    return (
        f"{DAGGER} Holm-adjusted p < {SIGNIFICANCE:g} vs {reference} over the table's {tested} tested "
        f"comparisons (family-wise): two-sided sign-flip permutation test of the mean paired difference "
        f"over papers (exact up to 16 papers, Monte Carlo beyond; no test below {MIN_PAIRS_FOR_TEST} "
        f"papers); the unadjusted and the Holm-adjusted p of every comparison are in the table's long CSV"
    )


def with_holm(long: pd.DataFrame) -> pd.DataFrame:
    """The long table with ``p_holm``: Holm's adjustment of its sign-flip p-values (one family
    per table); the daggers read it, the unadjusted ``p_sign_flip`` stays."""
    if "p_sign_flip" in long:
        long = long.assign(p_holm=holm(long["p_sign_flip"].astype(float)))
    return long


ZERO_PAPERS = ("keep", "drop")


def load_scores(paths: Sequence[str | Path], zero_papers: str = "keep") -> pd.DataFrame:
    """Every score record, metrics x 100.  ``zero_papers``: ``keep`` a score of 0 (the paper
    reports means over the dataset's papers), or ``drop`` it from that metric's mean and
    paired tests, as the ISQA authors' evaluation does (``metrics.py`` L108,
    ``if cur_fact_score > 0``)."""
    if zero_papers not in ZERO_PAPERS:
        raise ValueError(
            f"metrics.zero_papers must be one of {list(ZERO_PAPERS)}, got {zero_papers!r}"
        )
    rows = [obj for path in paths for _, obj in read_jsonl(path)]
    df = pd.DataFrame(rows)
    for metric in (*METRICS, "questeval_v024", "rouge1", "rouge2", "rougeL"):
        df[metric] = df[metric].astype(float) * 100
        if zero_papers == "drop":
            df.loc[df[metric] == 0, metric] = np.nan
    return df


def _cell(values: pd.Series, rounds: int, seed: int) -> dict[str, float]:
    """Mean, bootstrap interval (NaN for fewer than two papers: a zero-width interval misleads) and n."""
    ci = bootstrap_ci(values.to_numpy(dtype=float), rounds=rounds, seed=seed)
    if ci["n"] < 2:
        return {"mean": ci["estimate"], "lower": np.nan, "upper": np.nan, "n": ci["n"]}
    return {"mean": ci["estimate"], "lower": ci["lower"], "upper": ci["upper"], "n": ci["n"]}


def _fmt(
    mean: float,
    lower: float,
    upper: float,
    n: int | None = None,
    p_value: float = np.nan,
    questions: float = np.nan,
) -> str:
    """``mean[dagger] [lower, upper][double dagger below SMALL_N] (n=N, q=Q)``; "--" without a mean;
    ``p_value`` is the adjusted one (Holm)."""
    if np.isnan(mean):
        return "--"
    text = f"{mean:.2f}{DAGGER if p_value < SIGNIFICANCE else ''}"
    if not (np.isnan(lower) or np.isnan(upper)):
        text += f" [{lower:.2f}, {upper:.2f}]"
        if n is not None and n < SMALL_N:
            text += SMALL_N_MARK
    counts = [] if n is None else [f"n={int(n)}"]
    if not np.isnan(questions):
        counts.append(f"q={questions:.1f}")
    return f"{text} ({', '.join(counts)})" if counts else text


def _questions_kept(df: pd.DataFrame, system: str | None, metric: str) -> dict[str, float]:
    """QAGS cells: the mean number of questions kept per summary of ``system`` (0 counts)."""
    if metric != "qags" or not system or "qags_questions" not in df:
        return {}
    return {
        "questions_kept": float(
            df.loc[df["system"] == system, "qags_questions"].astype(float).mean()
        )
    }


def final_scores(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["final"]]


def best_prompt(df: pd.DataFrame, prompts: Sequence[str], metric: str) -> str | None:
    """The prompt with the highest mean ``metric`` (the paper's choice of baseline), among
    the prompts scored on the most papers: a metric undefined on some papers (QAGS with
    no question kept) would otherwise compare means over different numbers of papers.
    Ties keep the order of ``prompts``."""
    rows = df[df["system"].isin(prompts)]
    stats = rows.groupby("system")[metric].agg(["mean", "count"])
    stats = stats[stats["count"] > 0]
    if stats.empty:
        return None
    eligible = stats[stats["count"] == stats["count"].max()]
    order = [p for p in prompts if p in eligible.index]
    return max(order, key=lambda p: (eligible.loc[p, "mean"], -order.index(p)))


def compare(
    df: pd.DataFrame, system: str, baseline: str, metric: str, rounds: int, seed: int
) -> dict[str, Any]:
    """Paired comparison of ``system`` vs ``baseline`` on the papers both have."""
    a = df[df["system"] == baseline].set_index("paper_id")[metric]
    b = df[df["system"] == system].set_index("paper_id")[metric]
    common = a.index.intersection(b.index)
    a_values, b_values = a[common].to_numpy(float), b[common].to_numpy(float)
    boot = paired_bootstrap(a_values, b_values, rounds=rounds, seed=seed)
    flips = sign_flip_test(a_values, b_values, rounds=rounds, seed=seed)
    wil = wilcoxon_signed_rank(a_values, b_values)
    n = boot["n"]
    return {
        "diff": boot["mean_diff"],
        "diff_lower": boot["lower"] if n >= 2 else np.nan,
        "diff_upper": boot["upper"] if n >= 2 else np.nan,
        "p_sign_flip": flips["p_value"],
        "test": flips["method"],
        "p_wilcoxon": wil["p_value"] if n >= MIN_PAIRS_FOR_TEST else np.nan,
        "n_paired": n,
    }


def table1(
    scores: pd.DataFrame, main_system: str, rounds: int, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(long numeric table, wide formatted table) without vs with ISQA."""
    long_rows = []
    for (dataset, summarizer), df in final_scores(scores).groupby(["dataset", "summarizer"]):
        for metric, label in METRICS.items():
            base = best_prompt(df, BASELINE_PROMPTS, metric)
            for condition, system in (("w/o ISQA", base), ("w/ ISQA", main_system)):
                values = df[df["system"] == system][metric] if system else pd.Series(dtype=float)
                row = {
                    "dataset": dataset,
                    "summarizer": summarizer,
                    "condition": condition,
                    "metric": label,
                    "system": system,
                    **_cell(values, rounds, seed),
                    **_questions_kept(df, system, metric),
                }
                if condition == "w/ ISQA" and base:
                    row.update(compare(df, main_system, base, metric, rounds, seed))
                long_rows.append(row)
    long = with_holm(pd.DataFrame(long_rows))
    wide = _wide(long, ["summarizer", "condition"], ["dataset", "metric"])
    return long, wide


def _wide(long: pd.DataFrame, index: list[str], columns: list[str]) -> pd.DataFrame:
    if long.empty:
        return pd.DataFrame()

    def column(name: str) -> pd.Series:
        return long[name] if name in long else pd.Series(np.nan, index=long.index)

    cells = long.assign(
        cell=[
            _fmt(m, lo, hi, n, p, q)
            for m, lo, hi, n, p, q in zip(
                long["mean"],
                long["lower"],
                long["upper"],
                long["n"],
                column("p_holm"),
                column("questions_kept"),
                strict=True,
            )
        ]
    )
    wide = cells.pivot_table(
        index=index, columns=columns, values="cell", aggfunc="first", sort=False
    )
    wide.columns.names = [None] * len(columns)
    return wide.fillna("--")


def system_table(
    scores: pd.DataFrame, systems: dict[str, Any], baseline: str | None, rounds: int, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rows = labelled systems (a name, or a list of prompts whose best per metric is taken)."""
    long_rows = []
    for (dataset, summarizer), df in final_scores(scores).groupby(["dataset", "summarizer"]):
        for metric, label in METRICS.items():
            resolved = {
                name: (best_prompt(df, spec, metric) if isinstance(spec, (list, tuple)) else spec)
                for name, spec in systems.items()
            }
            base_system = resolved.get(baseline) if baseline else None
            for name, system in resolved.items():
                values = df[df["system"] == system][metric] if system else pd.Series(dtype=float)
                row = {
                    "dataset": dataset,
                    "summarizer": summarizer,
                    "row": name,
                    "metric": label,
                    "system": system,
                    **_cell(values, rounds, seed),
                    **_questions_kept(df, system, metric),
                }
                if base_system and system and name != baseline and not values.empty:
                    row.update(compare(df, system, base_system, metric, rounds, seed))
                long_rows.append(row)
    long = with_holm(pd.DataFrame(long_rows))
    return long, _wide(long, ["dataset", "summarizer", "row"], ["metric"])


def oracle_table(
    scores: pd.DataFrame, isqa_systems: Sequence[str], rounds: int, seed: int
) -> pd.DataFrame:
    """Final step vs best-of-steps (an oracle that looks at the metric), side by side, labelled."""
    rows = []
    steps = scores[scores["system"].isin(isqa_systems)]
    for (dataset, summarizer, system), df in steps.groupby(["dataset", "summarizer", "system"]):
        for metric, label in METRICS.items():
            final = df[df["final"]][metric]
            oracle = df.groupby("paper_id")[metric].max()
            rows.append(
                {
                    "dataset": dataset,
                    "summarizer": summarizer,
                    "system": system,
                    "metric": label,
                    "ISQA (final step)": _fmt(**_cell(final, rounds, seed)),
                    "oracle best-of-steps (not a result)": _fmt(**_cell(oracle, rounds, seed)),
                }
            )
    return (
        pd.DataFrame(rows).set_index(["dataset", "summarizer", "system", "metric"])
        if rows
        else pd.DataFrame()
    )


def questeval_appendix(scores: pd.DataFrame, rounds: int, seed: int) -> pd.DataFrame:
    """QuestEval as the paper defines it beside the v0.2.4 code's variant, for every final summary."""
    rows = []
    for (dataset, summarizer, system), df in final_scores(scores).groupby(
        ["dataset", "summarizer", "system"], sort=True
    ):
        row = {"dataset": dataset, "summarizer": summarizer, "system": system}
        for metric, label in QUESTEVAL_VARIANTS.items():
            row[label] = _fmt(**_cell(df[metric], rounds, seed))
        rows.append(row)
    return (
        pd.DataFrame(rows).set_index(["dataset", "summarizer", "system"])
        if rows
        else pd.DataFrame()
    )


def feedback_statistics(steps_paths: Sequence[str | Path]) -> pd.DataFrame:
    """What the feedback model's replies became, per run (dataset, summarizer, system).

    Columns: ``papers``, ``no_feedback_possible`` (papers without usable QA pairs),
    ``replies`` (feedback calls), one column per decision in
    :data:`isqaflow.isqa.feedback.DECISIONS` -- fact, non_fact, dropped_zero_f1, and
    the replies that add nothing: truncated (cut at max_new_tokens), unparsed,
    unanswerable, unanswerable_answer (the answer mentions it), evidence_not_in_summary
    -- then ``added`` and ``duplicates_skipped`` (facts and non-facts not added because
    a near-duplicate was already collected).  Every decision has its column, zero
    when it never occurred.
    """
    from isqaflow.isqa.feedback import DECISIONS

    rows = []
    for path in steps_paths:
        for _, rec in read_jsonl(path):
            rows.append(
                {
                    "dataset": rec["dataset"],
                    "summarizer": rec["summarizer"],
                    "system": rec["system"],
                    "papers": 1,
                    "no_feedback_possible": int(rec["note"] is not None),
                    **rec["counts"],
                }
            )
    if not rows:
        return pd.DataFrame()
    df = pd.DataFrame(rows).fillna(0)
    table = df.groupby(["dataset", "summarizer", "system"]).sum(numeric_only=True)
    known = ["papers", "no_feedback_possible", *DECISIONS, "added"]
    other = sorted(
        set(table.columns) - set(known)
    )  # a decision this code does not know: shown, not dropped
    table = table.reindex(columns=known + other, fill_value=0).astype(int)
    table.insert(2, "replies", table[[*DECISIONS, *other]].sum(axis=1))
    table["duplicates_skipped"] = table["fact"] + table["non_fact"] - table["added"]
    # steps without a fact or non-fact, summaries from the act-on-feedback prompt with empty lists
    use = feedback_use(read_refinements(steps_paths))
    return table.join(use).fillna(0).astype(int)


def figure3(
    scores: pd.DataFrame,
    main_system: str,
    dataset: str,
    paths: Sequence[str | Path],
    warning: str = "",
) -> None:
    """QAGS and QuestEval per refinement step; ``warning``: :func:`caveat`'s."""
    fig, axes = new_figure(ncols=2)
    df = scores[(scores["system"] == main_system) & (scores["dataset"] == dataset)]
    for ax, metric in zip(axes, ("qags", "questeval"), strict=True):
        for summarizer, sub in df.groupby("summarizer"):
            per_step = sub.groupby("step")[metric].agg(["mean", "sem"]).reset_index()
            ax.errorbar(
                per_step["step"],
                per_step["mean"],
                yerr=per_step["sem"].fillna(0),
                marker="o",
                capsize=3,
                label=summarizer,
            )
        ax.set_xlabel("refinement step")
        ax.set_ylabel(f"{METRICS[metric]} (x100)")
        ax.set_title(f"{METRICS[metric]} on {dataset}")
        ax.grid(alpha=0.3)
        if df["step"].notna().any():
            ax.set_xticks(sorted(int(s) for s in df["step"].dropna().unique()))
    axes[0].legend(title="summarizer", fontsize=8)
    caveat(fig, warning)
    save_figure(fig, paths)


def build_isqa_tables(
    score_paths: Sequence[str | Path],
    steps_paths: Sequence[str | Path],
    out_dir: str | Path,
    figure_dir: str | Path,
    main_feedback: str,
    feedback_models: Sequence[str],
    datasets: Sequence[str],
    rounds: int,
    seed: int,
    control_paths: Sequence[str | Path] = (),
    zero_papers: str = "keep",
    ppi: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    """Entry point of rule isqa_tables; file names are fixed (see rules/isqa/metrics.smk);
    ``zero_papers``: see :func:`load_scores`; ``ppi``: the human evaluation's files per
    "<dataset>/<summarizer>" (:func:`isqaflow.metrics.ppi_table.isqa_ppi_table`).

    ``control_paths`` are the known-answer control files of QAGS, QuestEval and the feedback
    models: the tables built on them end their captions with their accuracy (the numbers of
    ``results/tables/validity.*``: same records, same exact tests).
    """
    control_summary = validity_summary(read_control_records(control_paths))
    metric_controls = (
        " " + validity_note(control_summary, QAGS) + " " + validity_note(control_summary, QUESTEVAL)
    )
    feedback_controls = " " + validity_note(control_summary, FEEDBACK_MODEL)
    # the figure plots these two metrics (their control records' names are the score fields)
    figure_warning = " ".join(
        w
        for instrument, name in ((QAGS, "qags"), (QUESTEVAL, "questeval"))
        if (w := cannot_rank(control_summary, instrument, [name]))
    )
    # first, in the caption of every table built on the metrics (or the feedback models)
    opening = figure_warning + " " if figure_warning else ""
    feedback_warning = cannot_rank(control_summary, FEEDBACK_MODEL)
    scores = load_scores(score_paths, zero_papers)
    out_dir, figure_dir = Path(out_dir), Path(figure_dir)
    main = f"isqa-{main_feedback}-human"
    generated = f"isqa-{main_feedback}-generated"
    refinements = read_refinements(steps_paths)
    long, wide = table1(scores, main, rounds, seed)
    long.to_csv(out_dir / "isqa_table1_long.csv", index=False)
    write_table(
        wide,
        table_paths(out_dir / "isqa_table1"),
        caption=opening
        + f"Table 1: without vs with ISQA ({CELL_NOTE}). {significance_note('w/o ISQA', long)}"
        + identity_note(refinements, {main: "w/ ISQA"})
        + metric_controls
        + qa_metric_note(scores),
    )
    long2, wide2 = system_table(
        scores,
        {"pre-hoc prompt": list(PREHOC_PROMPTS), "generic feedback": "generic", "ISQA": main},
        "pre-hoc prompt",
        rounds,
        seed,
    )
    long2.to_csv(out_dir / "isqa_table2_long.csv", index=False)
    write_table(
        wide2,
        table_paths(out_dir / "isqa_table2"),
        caption=opening
        + (
            "Table 2: feedback strategies (pre-hoc = best of the E.2 prompts per metric, among the "
            f"prompts scored on the most papers; {CELL_NOTE}). {significance_note('pre-hoc prompt', long2)}"
        )
        + identity_note(refinements, {main: "ISQA"})
        + metric_controls,
    )
    long3, wide3 = system_table(
        scores, {f: f"isqa-{f}-human" for f in feedback_models}, main_feedback, rounds, seed
    )
    long3.to_csv(out_dir / "isqa_table3_long.csv", index=False)
    write_table(
        wide3,
        table_paths(out_dir / "isqa_table3"),
        caption=opening
        + f"Table 3: feedback models (human questions; {CELL_NOTE}). {significance_note(main_feedback, long3)}"
        + identity_note(refinements, {f"isqa-{f}-human": f"ISQA ({f})" for f in feedback_models})
        + metric_controls,
    )
    long4, wide4 = system_table(
        scores,
        {"model-generated": generated, "human-annotated": main},
        "model-generated",
        rounds,
        seed,
    )
    long4.to_csv(out_dir / "isqa_table4_long.csv", index=False)
    write_table(
        wide4,
        table_paths(out_dir / "isqa_table4"),
        caption=opening
        + f"Table 4: source of the QA pairs ({CELL_NOTE}). {significance_note('model-generated', long4)}"
        + identity_note(
            refinements, {generated: "ISQA (model-generated)", main: "ISQA (human-annotated)"}
        )
        + metric_controls,
    )
    isqa_systems = sorted(s for s in scores["system"].unique() if s.startswith("isqa-"))
    write_table(
        oracle_table(scores, isqa_systems, rounds, seed),
        table_paths(out_dir / "isqa_oracle"),
        caption=opening
        + (
            "Final step (the ISQA result) vs best-of-steps oracle (selects on the test metric; "
            "mean [95% bootstrap CI] over papers, x100; n = papers; " + small_n_note("papers") + ")"
        )
        + metric_controls,
    )
    write_table(
        questeval_appendix(scores, rounds, seed),
        table_paths(out_dir / "isqa_appendix_questeval_v024"),
        caption=opening
        + (
            "Appendix: QuestEval as the paper defines it (harmonic mean of precision and recall) and "
            "as the public v0.2.4 code computes it (arithmetic mean of both directions' F1 and "
            "answerability; no BERTScore), final summaries (mean [95% bootstrap CI] over papers, "
            "x100; n = papers; " + small_n_note("papers") + ")"
        )
        + metric_controls,
    )
    write_table(
        feedback_statistics(steps_paths),
        table_paths(out_dir / "isqa_feedback_stats"),
        digits=0,
        caption=(feedback_warning + " " if feedback_warning else "")
        + (
            "Feedback decisions per run; the last three columns: the steps whose summary was asked "
            "about, those of them that gave no fact and no non-fact, and the summaries generated from "
            "the act-on-feedback prompt with no fact and no non-fact (Algorithm 1 refines after every "
            "step: a prompt change, not feedback)."
        )
        + feedback_controls,
    )
    anchored = isqa_ppi_table(scores, ppi or {})
    write_table(
        anchored,
        table_paths(out_dir / "isqa_ppi"),
        digits=1,
        caption=opening + ppi_caption(anchored) + "." + metric_controls,
    )
    for dataset in datasets:
        figure3(
            scores,
            main,
            dataset,
            [
                figure_dir / f"isqa_figure3_{dataset}.png",
                figure_dir / f"isqa_figure3_{dataset}.svg",
            ],
            figure_warning,
        )
