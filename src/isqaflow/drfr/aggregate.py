"""InFoBench aggregation: the Decomposed Requirements Following Ratio (DRFR).

Each instruction is decomposed into yes/no questions; the judge answers each one.
DRFR is the share of YES over all questions, pooled (not averaged per instruction).
Judgments come as one row per (model, instruction, question) with columns
``model``, ``instruction_id``, ``subset`` ("Easy"/"Hard"), ``category``,
``question_index``, ``labels`` (constraint types) and ``answer``
("YES"/"NO"/"INVALID").  INVALID marks a judge reply that could not be parsed: it
counts as NO, as in the paper's protocol, and is reported in its own column so it
is never silently dropped.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

__all__ = ["drfr_summary", "drfr_by_label", "drfr_by_category", "drfr_bootstrap", "summary_drfr"]

ANSWERS = ("YES", "NO", "INVALID")
SUBSETS = ("Easy", "Hard")
LABELS = ("Content", "Linguistic", "Style", "Format", "Number")
SUMMARY_COLUMNS = (
    "dataset",
    "summarizer",
    "system",
    "drfr",
    "lower",
    "upper",
    "n_papers",
    "n_questions",
    "n_invalid",
)
COLUMNS = ("model", "instruction_id", "subset", "category", "question_index", "labels", "answer")


def _validated(judgments: pd.DataFrame) -> pd.DataFrame:
    """Check the judgments table and add boolean ``yes`` and ``invalid`` columns."""
    missing = [column for column in COLUMNS if column not in judgments.columns]
    if missing:
        raise ValueError(f"judgments lack the columns {missing}")
    if judgments.empty:
        raise ValueError("no judgments to aggregate")
    bad_answer = ~judgments["answer"].isin(ANSWERS)
    if bad_answer.any():
        row = judgments.index[bad_answer][0]
        raise ValueError(f"row {row}: answer {judgments.at[row, 'answer']!r} not in {ANSWERS}")
    bad_subset = ~judgments["subset"].isin(SUBSETS)
    if bad_subset.any():
        row = judgments.index[bad_subset][0]
        raise ValueError(f"row {row}: subset {judgments.at[row, 'subset']!r} not in {SUBSETS}")
    duplicated = judgments.duplicated(["model", "instruction_id", "question_index"])
    if duplicated.any():
        row = judgments.index[duplicated][0]
        raise ValueError(f"row {row}: question judged twice for the same model and instruction")
    subsets_per_instruction = judgments.groupby("instruction_id")["subset"].nunique()
    if (subsets_per_instruction > 1).any():
        instruction = subsets_per_instruction.index[subsets_per_instruction > 1][0]
        raise ValueError(f"instruction {instruction!r} is in more than one subset")
    return judgments.assign(
        yes=judgments["answer"] == "YES", invalid=judgments["answer"] == "INVALID"
    )


def _ratio_table(judged: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """DRFR (YES / questions) and question count ``n`` per group of ``keys``."""
    grouped = judged.groupby(keys, observed=True, sort=True)["yes"]
    return pd.DataFrame({"drfr": grouped.mean(), "n": grouped.size()})


def drfr_summary(judgments: pd.DataFrame) -> pd.DataFrame:
    """Per model: pooled DRFR overall and per subset, counts, INVALID rate, strict rate.

    ``strict_rate`` is the share of instructions whose questions are all YES (the
    prompt-level rate).  ``drfr_easy``/``drfr_hard`` are NaN for a model without
    questions in that subset.  Indexed by model.
    """
    judged = _validated(judgments)
    by_model = judged.groupby("model", sort=True)
    per_subset = judged.pivot_table(
        index="model", columns="subset", values="yes", aggfunc="mean", observed=True
    ).reindex(columns=list(SUBSETS))
    all_yes = judged.groupby(["model", "instruction_id"])["yes"].all()
    summary = pd.DataFrame(
        {
            "drfr": by_model["yes"].mean(),
            "drfr_easy": per_subset["Easy"],
            "drfr_hard": per_subset["Hard"],
            "n_questions": by_model.size(),
            "n_yes": by_model["yes"].sum(),
            "n_invalid": by_model["invalid"].sum(),
            "invalid_rate": by_model["invalid"].mean(),
            "n_instructions": by_model["instruction_id"].nunique(),
            "strict_rate": all_yes.groupby(level="model").mean(),
        }
    )
    summary.index.name = "model"
    return summary


def drfr_by_label(judgments: pd.DataFrame) -> pd.DataFrame:
    """DRFR and question count per (model, constraint label).

    A question with several labels counts toward each of them; labels are in the
    paper's order (Content, Linguistic, Style, Format, Number).  An unknown label
    raises ValueError.
    """
    judged = _validated(judgments)
    exploded = judged[["model", "labels", "yes"]].explode("labels").dropna(subset=["labels"])
    unknown = ~exploded["labels"].isin(LABELS)
    if unknown.any():
        raise ValueError(f"unknown constraint label {exploded['labels'][unknown].iloc[0]!r}")
    exploded["label"] = pd.Categorical(exploded["labels"], categories=list(LABELS))
    return _ratio_table(exploded, ["model", "label"])


def drfr_by_category(judgments: pd.DataFrame) -> pd.DataFrame:
    """DRFR and question count per (model, instruction category)."""
    return _ratio_table(_validated(judgments), ["model", "category"])


def drfr_bootstrap(
    judgments: pd.DataFrame,
    rounds: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
    by: Literal["subset"] | None = "subset",
) -> pd.DataFrame:
    """Percentile bootstrap interval of the pooled DRFR, resampling instructions.

    Questions of one instruction share its response, so instructions (not
    questions) are the resampled unit.  Per-instruction YES and question counts
    are precomputed; all rounds' resample indices are drawn at once and each
    replicate is a ratio of sums.  Rows per model: "all", plus each subset when
    ``by="subset"``; every row uses a fresh generator from ``seed``, so a row does
    not depend on the other models or subsets in the table.  Indexed by (model,
    subset) with ``drfr``, ``lower``, ``upper``, ``n_instructions``, ``n_questions``.
    """
    if by not in ("subset", None):
        raise ValueError(f"by must be 'subset' or None, got {by!r}")
    if rounds < 1 or not 0.0 < alpha < 1.0:
        raise ValueError(f"need rounds >= 1 and 0 < alpha < 1, got {rounds} and {alpha}")
    per_instruction = (
        _validated(judgments)
        .groupby(["model", "instruction_id", "subset"], sort=True)["yes"]
        .agg(n_yes="sum", n_questions="size")
        .reset_index()
    )
    groups = [("all", per_instruction)]
    if by == "subset":
        groups += [
            (subset, per_instruction[per_instruction["subset"] == subset]) for subset in SUBSETS
        ]
    rows = []
    for group_name, instructions in groups:
        for model, counts in instructions.groupby("model", sort=True):
            n_yes = counts["n_yes"].to_numpy(dtype=float)
            n_questions = counts["n_questions"].to_numpy(dtype=float)
            indices = np.random.default_rng(seed).integers(0, len(counts), (rounds, len(counts)))
            replicates = n_yes[indices].sum(axis=1) / n_questions[indices].sum(axis=1)
            lower, upper = np.quantile(replicates, [alpha / 2, 1 - alpha / 2])
            rows.append(
                {
                    "model": model,
                    "subset": group_name,
                    "drfr": n_yes.sum() / n_questions.sum(),
                    "lower": float(lower),
                    "upper": float(upper),
                    "n_instructions": len(counts),
                    "n_questions": int(n_questions.sum()),
                }
            )
    return pd.DataFrame(rows).sort_values(["model"], kind="stable").set_index(["model", "subset"])


def summary_drfr(
    judgments: pd.DataFrame, rounds: int = 1000, alpha: float = 0.05, seed: int = 0
) -> pd.DataFrame:
    """Pooled DRFR per (dataset, summarizer, system) with a bootstrap interval over papers (no
    row, the columns kept, without judged summaries: released judgments only, rules/peers.smk)."""
    rows = []
    if judgments.empty:
        return pd.DataFrame(columns=list(SUMMARY_COLUMNS))
    for keys, df in judgments.groupby(["dataset", "summarizer", "system"]):
        per_paper = df.groupby("paper_id")["answer"].agg(
            yes=lambda a: int((a == "YES").sum()), n="size"
        )
        yes, n = per_paper["yes"].to_numpy(float), per_paper["n"].to_numpy(float)
        idx = np.random.default_rng(seed).integers(0, len(yes), size=(rounds, len(yes)))
        boot = yes[idx].sum(1) / n[idx].sum(1)
        rows.append(
            {
                "dataset": keys[0],
                "summarizer": keys[1],
                "system": keys[2],
                "drfr": yes.sum() / n.sum(),
                "lower": float(np.quantile(boot, alpha / 2)),
                "upper": float(np.quantile(boot, 1 - alpha / 2)),
                "n_papers": len(yes),
                "n_questions": int(n.sum()),
                "n_invalid": int((df["answer"] == "INVALID").sum()),
            }
        )
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
