"""ROUGE-1, ROUGE-2 and ROUGE-L F-measure with stemming, via ``rouge-score``.

The ISQA paper's "ROUGE" is the mean of the three F-measures (Section 4.3).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")


@functools.cache
def _scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)


def rouge(prediction: str, reference: str) -> dict[str, float]:
    """F-measures of ROUGE-1/2/L and their mean (key ``rouge``), each in [0, 1]."""
    scores = _scorer().score(reference, prediction)
    out = {name: scores[name].fmeasure for name in ROUGE_TYPES}
    out["rouge"] = sum(out.values()) / len(ROUGE_TYPES)
    return out


def mean_rouge(predictions: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    if len(predictions) != len(references):
        raise ValueError("predictions and references differ in length")
    if not predictions:
        return {name: float("nan") for name in (*ROUGE_TYPES, "rouge")}
    rows = [rouge(p, r) for p, r in zip(predictions, references, strict=True)]
    return {key: sum(row[key] for row in rows) / len(rows) for key in rows[0]}
