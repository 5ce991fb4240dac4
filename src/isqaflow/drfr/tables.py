"""DRFR tables and the constraint-type figure (InFoBench Table 5 and Figure 3), and the
summary DRFR table (without vs with ISQA).

DRFR is x 100.  Intervals are 95% bootstrap intervals resampling instructions (papers
for summaries); every cell says its n, and an interval from fewer than
:data:`isqaflow.stats.SMALL_N` of them carries :data:`isqaflow.stats.SMALL_N_MARK`.  INVALID judge replies count as NO and are reported in their own
column of every table.  Answers are read under each judge's configured verdict rule
(raw or calibrated, :mod:`isqaflow.drfr.judge`), which every caption names, and
every caption ends with the judges' known-answer controls
(:func:`isqaflow.report.validity.validity_note`, computed from the DRFR control
files with the same exact tests as ``results/tables/validity.*``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from isqaflow.drfr.aggregate import (
    LABELS,
    drfr_bootstrap,
    drfr_by_category,
    drfr_by_label,
    drfr_summary,
    summary_drfr,
)
from isqaflow.drfr.ppi_table import drfr_ppi_table, ppi_caption
from isqaflow.io import read_jsonl
from isqaflow.report.figures import caveat, new_figure, save_figure
from isqaflow.report.tables import table_paths, write_table
from isqaflow.report.validity import (
    cannot_rank,
    read_control_records,
    validity_note,
    validity_summary,
)
from isqaflow.stats import SMALL_N, SMALL_N_MARK, small_n_note
from isqaflow.suites.drfr import JUDGE as DRFR_JUDGE


def load_judgments(paths: Sequence[str | Path]) -> pd.DataFrame:
    return pd.DataFrame([obj for path in paths for _, obj in read_jsonl(path)])


def rule_note(*judgment_tables: pd.DataFrame) -> str:
    """Which verdict rule each judge's answers were read under, e.g. "Verdict rule: local raw."."""
    rules: dict[str, set[str]] = {}
    for table in judgment_tables:
        if table.empty:
            continue
        if "rule" not in table.columns:
            raise ValueError(
                "judgments lack the column 'rule' (written by the judge since the verdict rules)"
            )
        for judge_name, rule in table[["judge", "rule"]].drop_duplicates().itertuples(index=False):
            rules.setdefault(judge_name, set()).add(rule)
    mixed = {j: sorted(r) for j, r in rules.items() if len(r) > 1}
    if mixed:
        raise ValueError(f"judgments of one judge under more than one verdict rule: {mixed}")
    shown = ", ".join(f"{j} {r.pop()}" for j, r in sorted(rules.items()))
    return f"Verdict rule: {shown}." if shown else ""


def _caption(text: str, *notes: str, warning: str = "") -> str:
    """``warning`` (:func:`isqaflow.report.validity.cannot_rank`'s sentence) opens the caption."""
    return " ".join(
        [*([warning] if warning else []), text.rstrip(".") + ".", *(n for n in notes if n)]
    )


def _cell(point: float, lower: float, upper: float, n: int) -> str:
    """``DRFR [lower, upper] (n=N)`` x100, the interval marked below :data:`isqaflow.stats.SMALL_N`."""
    if np.isnan(point):
        return "--"
    mark = SMALL_N_MARK if n < SMALL_N else ""
    return f"{100 * point:.1f} [{100 * lower:.1f}, {100 * upper:.1f}]{mark} (n={int(n)})"


def main_table(
    judgments: pd.DataFrame, rounds: int, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(numeric, formatted): per judge and model, Easy / Hard / Overall DRFR with intervals."""
    numeric, formatted = [], []
    for judge_name, df in judgments.groupby("judge"):
        summary = drfr_summary(df)
        boot = drfr_bootstrap(df, rounds=rounds, seed=seed, by="subset")
        for model in summary.index:
            row = {"judge": judge_name, "model": model}
            cells = {"judge": judge_name, "model": model}
            for subset, label in (("Easy", "Easy"), ("Hard", "Hard"), ("all", "Overall")):
                key = (model, subset)
                if key in boot.index:
                    b = boot.loc[key]
                    row.update(
                        {
                            label: b["drfr"],
                            f"{label}_lower": b["lower"],
                            f"{label}_upper": b["upper"],
                            f"{label}_n": int(b["n_instructions"]),
                        }
                    )
                    cells[label] = _cell(
                        b["drfr"], b["lower"], b["upper"], int(b["n_instructions"])
                    )
                else:
                    cells[label] = "--"
            s = summary.loc[model]
            extra = {
                "strict": s["strict_rate"],
                "questions": int(s["n_questions"]),
                "invalid": int(s["n_invalid"]),
            }
            row.update(extra)
            cells.update(
                {
                    "strict (prompt level)": f"{100 * s['strict_rate']:.1f}",
                    "instructions": int(boot.loc[(model, "all"), "n_instructions"]),
                    "questions": extra["questions"],
                    "invalid": extra["invalid"],
                }
            )
            numeric.append(row)
            formatted.append(cells)
    return pd.DataFrame(numeric), pd.DataFrame(formatted).set_index(["judge", "model"])


def _per_judge(judgments: pd.DataFrame, table) -> pd.DataFrame:
    """``table(judgments of one judge)`` for every judge, stacked, with DRFR x 100."""
    parts = []
    for judge_name, df in judgments.groupby("judge"):
        part = table(df).reset_index()
        part.insert(0, "judge", judge_name)
        parts.append(part)
    long = pd.concat(parts, ignore_index=True)
    long["drfr"] = 100 * long["drfr"]
    return long


def label_table(judgments: pd.DataFrame, with_n: bool = False) -> pd.DataFrame:
    """DRFR x100 per (judge, model) and constraint label; ``with_n``: each label followed by
    its question count (``<label> n``)."""
    long = _per_judge(judgments, drfr_by_label)
    labels = [lab for lab in LABELS if lab in set(long["label"])]
    drfr = long.pivot_table(index=["judge", "model"], columns="label", values="drfr", observed=True)
    drfr = drfr.reindex(columns=labels)
    if not with_n:
        return drfr
    counts = long.pivot_table(index=["judge", "model"], columns="label", values="n", observed=True)
    table = pd.DataFrame(index=drfr.index)
    for label in labels:
        table[label] = drfr[label]
        table[f"{label} n"] = counts[label].astype("Int64")
    return table


def category_table(judgments: pd.DataFrame) -> pd.DataFrame:
    return _per_judge(judgments, drfr_by_category).set_index(["judge", "model", "category"])


def label_figure(labels: pd.DataFrame, paths: Sequence[str | Path], warning: str = "") -> None:
    """DRFR per constraint type, a bar per judge and model; ``warning``: :func:`caveat`'s."""
    fig, axes = new_figure(width=max(4.5, 1.1 * len(labels.columns) + 2))
    ax = axes[0]
    rows = list(labels.index)
    width = 0.8 / max(len(rows), 1)
    x = np.arange(len(labels.columns))
    for k, idx in enumerate(rows):
        name = " / ".join(str(p) for p in idx) if isinstance(idx, tuple) else str(idx)
        ax.bar(x + k * width, labels.loc[idx].to_numpy(float), width, label=name)
    ax.set_xticks(x + width * (len(rows) - 1) / 2, labels.columns)
    ax.set_ylabel("DRFR (x100)")
    ax.set_ylim(0, 100)
    ax.set_title("DRFR per constraint type")
    ax.legend(fontsize=7, title="judge / model")
    ax.grid(axis="y", alpha=0.3)
    caveat(fig, warning)
    save_figure(fig, paths)


def build_drfr_tables(
    judgment_paths: Sequence[str | Path],
    summary_paths: Sequence[str | Path],
    out_dir: str | Path,
    figure_dir: str | Path,
    rounds: int,
    seed: int,
    control_paths: Sequence[str | Path] = (),
    ppi: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    """Entry point of rule drfr_tables; file names are fixed (see rules/drfr/drfr.smk).

    ``ppi``: per dataset, the judgments, human labels, responses and sample kind of the PPI
    table (:func:`isqaflow.drfr.ppi_table.drfr_ppi_table`; None or empty: a table without rows).

    ``control_paths`` are the DRFR judges' control files; their summary (exact tests,
    :func:`isqaflow.report.validity.validity_summary`) is the captions' controls note.
    """
    out_dir, figure_dir = Path(out_dir), Path(figure_dir)
    judgments = load_judgments(judgment_paths)
    summaries = load_judgments(summary_paths)
    control_summary = validity_summary(read_control_records(control_paths))
    controls = validity_note(control_summary, DRFR_JUDGE)
    # first, in every caption and the figure: the judge that fails its controls cannot rank
    warning = cannot_rank(control_summary, DRFR_JUDGE)
    rules = rule_note(judgments, summaries)
    numeric, formatted = main_table(judgments, rounds, seed)
    numeric.to_csv(out_dir / "drfr_table5_long.csv", index=False)
    write_table(
        formatted,
        table_paths(out_dir / "drfr_table5"),
        caption=_caption(
            "DRFR (x100, 95% bootstrap CI over instructions; n = instructions; "
            + small_n_note("instructions")
            + "); INVALID replies count as NO",
            rules,
            controls,
            warning=warning,
        ),
    )
    labels = label_table(judgments)
    write_table(
        label_table(judgments, with_n=True),
        table_paths(out_dir / "drfr_by_constraint"),
        digits=1,
        caption=_caption(
            "DRFR per constraint type (x100; '<label> n': its questions); a question "
            "with several labels counts toward each",
            rules,
            controls,
            warning=warning,
        ),
    )
    write_table(
        category_table(judgments),
        table_paths(out_dir / "drfr_by_category"),
        digits=1,
        caption=_caption(
            "DRFR per instruction category (x100; n: questions)", rules, controls, warning=warning
        ),
    )
    label_figure(
        labels,
        [figure_dir / "drfr_constraints.png", figure_dir / "drfr_constraints.svg"],
        warning,
    )
    table = summary_drfr(summaries, rounds=rounds, seed=seed)
    table.to_csv(out_dir / "drfr_summaries_long.csv", index=False)
    shown = table.assign(
        DRFR=[
            _cell(d, lo, hi, n)
            for d, lo, hi, n in zip(
                table["drfr"], table["lower"], table["upper"], table["n_papers"], strict=True
            )
        ]
    )
    write_table(
        shown.set_index(["dataset", "summarizer", "system"])[
            ["DRFR", "n_papers", "n_questions", "n_invalid"]
        ],
        table_paths(out_dir / "drfr_summaries"),
        caption=_caption(
            "DRFR of the summaries: QA pairs as requirements (x100, 95% CI "
            "over papers; n = papers; " + small_n_note("papers") + ")",
            rules,
            controls,
            warning=warning,
        ),
    )
    anchored = drfr_ppi_table(ppi or {})
    write_table(
        anchored,
        table_paths(out_dir / "drfr_ppi"),
        digits=1,
        caption=_caption(ppi_caption(anchored), rules, controls, warning=warning),
    )
