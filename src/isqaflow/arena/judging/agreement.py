"""Agreement between an LLM judge and human annotators on pairwise answer preferences.

Each judged pair carries human ratings of answer 1 relative to answer 2 on the
5-point scale Better / Slightly Better / Tie / Slightly Worse / Worse.  As in the
RAG-QA Arena paper they are merged into +1 / 0 / -1 and reduced to one label per
pair by strict majority (no majority counts as a tie), then compared with the
judge's verdicts ("1" -> +1, "2" -> -1, "tie" -> 0) by Pearson correlation,
Cohen's kappa and accuracy.  :func:`read_human_labels` (:mod:`isqaflow.data.human_labels`)
reads and checks the human preference file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence

import numpy as np
import pandas as pd

# The human preference file is read and checked at conversion (isqaflow.data.human_labels).
from isqaflow.data.human_labels import (  # noqa: F401 (the names this module has always offered)
    HUMAN_COLUMNS,
    MERGED_RATINGS,
    PAIR_COLUMNS,
    merge_rating,
    read_human_labels,
)

VERDICT_SCORES = {"1": 1, "2": -1, "tie": 0}
SCORES = (1, 0, -1)


def majority_vote(values: Sequence[int]) -> int:
    """The value held by a strict majority of ``values``; 0 (a tie) when there is none."""
    if len(values) == 0:
        raise ValueError("majority_vote needs at least one value")
    value, count = Counter(values).most_common(1)[0]
    return int(value) if 2 * count > len(values) else 0


def human_majority(df: pd.DataFrame, pair: str = "pair_id", rating: str = "rating") -> pd.Series:
    """Merged majority human label per pair id (one row per rating in ``df``)."""
    merged = df[rating].map(merge_rating)
    majority = merged.groupby(df[pair]).agg(lambda values: majority_vote(list(values)))
    return majority.astype(int).rename("human")


def verdict_to_score(verdict: object) -> int | None:
    """Judge verdict as a score: "1" -> +1, "2" -> -1, "tie" -> 0, missing (None/NaN) -> None."""
    if verdict is None or verdict is pd.NA or (isinstance(verdict, float) and np.isnan(verdict)):
        return None
    key = str(verdict).strip().lower()
    if key not in VERDICT_SCORES:
        raise ValueError(f"unknown judge verdict {verdict!r}; expected '1', '2', 'tie' or missing")
    return VERDICT_SCORES[key]


def cohen_kappa(
    a: Sequence[Hashable], b: Sequence[Hashable], labels: Sequence[Hashable] | None = None
) -> float:
    """Cohen's kappa (p_o - p_e) / (1 - p_e) between two equally long label sequences.

    ``labels`` lists the allowed labels (default: those observed); other values raise
    ValueError.  When the expected agreement p_e is 1 both raters used one and the same
    label throughout, so the observed agreement is 1 too and kappa is defined as 1.0
    (the formula would give 0/0).
    """
    if len(a) != len(b):
        raise ValueError(f"label sequences differ in length: {len(a)} != {len(b)}")
    if len(a) == 0:
        raise ValueError("cohen_kappa needs at least one pair of labels")
    allowed = pd.Index(pd.unique(pd.Series([*a, *b], dtype=object)) if labels is None else labels)
    codes_a = allowed.get_indexer(pd.Series(list(a), dtype=object))
    codes_b = allowed.get_indexer(pd.Series(list(b), dtype=object))
    if (codes_a < 0).any() or (codes_b < 0).any():
        raise ValueError(f"labels outside {list(allowed)}")
    n = len(a)
    agreements = int((codes_a == codes_b).sum())
    # Integer arithmetic: p_e = sum_k count_a[k] * count_b[k] / n**2, exact test for p_e == 1.
    counts_a = np.bincount(codes_a, minlength=len(allowed))
    counts_b = np.bincount(codes_b, minlength=len(allowed))
    chance = int((counts_a * counts_b).sum())
    if chance == n * n:
        return 1.0
    observed = agreements / n
    expected = chance / (n * n)
    return (observed - expected) / (1.0 - expected)


def _distribution(scores: pd.Series) -> dict[int, float]:
    """Share of +1 / 0 / -1 in ``scores`` (NaN shares when empty)."""
    return {
        score: float((scores == score).mean()) if len(scores) else float("nan") for score in SCORES
    }


def judge_human_agreement(human: pd.Series, judge: pd.Series) -> dict:
    """Agreement of judge verdicts with merged human labels, pair by pair.

    ``human`` holds +1 / 0 / -1 per pair id (as from `human_majority`); ``judge`` holds
    verdicts "1" / "2" / "tie" or None/NaN per pair id.  Pairs of ``human`` without a
    judge verdict (missing value or absent id) count in ``n_judge_invalid`` and are left
    out of every statistic; judge ids without a human label raise ValueError.  Pearson r
    and p are NaN when undefined (fewer than two pairs, or a constant side).  Label
    distributions are shares over the ``n`` compared pairs.
    """
    if human.index.has_duplicates or judge.index.has_duplicates:
        raise ValueError("pair ids must be unique in both series")
    unlabelled = judge.index.difference(human.index)
    if len(unlabelled):
        raise ValueError(f"judge verdicts for pairs without human labels: {list(unlabelled[:5])}")
    judge_scores = judge.reindex(human.index).map(verdict_to_score).astype(float)
    human_scores = human.astype(float)
    n_judge_invalid = int(judge_scores.isna().sum())
    both = judge_scores.notna() & human_scores.notna()
    human_scores, judge_scores = human_scores[both], judge_scores[both]
    n = int(both.sum())

    pearson_r = pearson_p = float("nan")
    if n >= 2 and human_scores.nunique() > 1 and judge_scores.nunique() > 1:
        from scipy.stats import pearsonr  # scipy.stats takes ~0.4 s to import; only needed here

        result = pearsonr(human_scores, judge_scores)
        pearson_r, pearson_p = float(result.statistic), float(result.pvalue)
    return {
        "n": n,
        "n_judge_invalid": n_judge_invalid,
        "pearson_r": pearson_r,
        "pearson_p": pearson_p,
        "cohen_kappa": cohen_kappa(list(human_scores), list(judge_scores)) if n else float("nan"),
        "accuracy": float((human_scores == judge_scores).mean()) if n else float("nan"),
        "human_distribution": _distribution(human_scores),
        "judge_distribution": _distribution(judge_scores),
    }
