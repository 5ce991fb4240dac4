"""Prediction-powered inference: a judge's many labels anchored on a few human labels.

A judge labels all N items; people label a random subset of n of them.  The judge-only mean is
biased by however the judge errs; the human-only mean is unbiased but wide.  Prediction-powered
inference (Angelopoulos et al., Science 2023) estimates what people would say as the judge's
mean over all items plus the mean human-minus-judge error on the labelled ones, which is
unbiased whatever the judge does; PPI++ (Angelopoulos, Duchi and Zrnic, 2024) scales the judge's
part by a tuned ``lambda`` that minimises the estimate's variance, so the interval is never
wider (asymptotically) than the human labels alone and narrower when the judge tracks people.

For the mean of a bounded outcome (a win rate, a share of YES, a factuality score), with human
labels ``Y`` and the judge's labels ``Yhat`` on the n labelled items and ``Yhat_unlabeled`` on
the N items (the unlabelled ones, as in ppi-python; the paper's N):

    theta(lambda) = lambda * mean(Yhat_unlabeled) + mean(Y - lambda * Yhat)
    se^2          = lambda^2 * var0(Yhat_unlabeled) / N + var0(Y - lambda * Yhat) / n
    lambda        = clip(cov0(Y, Yhat) / ((1 + n / N) * var1([Yhat; Yhat_unlabeled])), 0, 1)

(var0 and cov0 divide by the count, var1 by the count less one -- as ppi-python 0.2.3's
``ppi_mean_ci`` and ``_calc_lam_glm`` do), and the normal interval theta +- z * se.  A paired
difference of two systems judged and human-labelled on the same items is the mean of the
per-item difference, so :func:`ppi_paired_difference` is the same estimator on ``Y_b - Y_a``
and ``Yhat_b - Yhat_a``.

Validity needs the human subset to be a **random** sample of the items the judge judged
(independent of the outcome); a subset picked by hand, by disagreement or by length gives a
biased rectifier and PPI does not apply: :func:`ppi_mean` takes ``random_subset`` and, when it
is False, returns the judge-only and human-only numbers with the reason instead of a PPI row.

``tests/unit/test_ppi.py`` checks the formulas against ppi-python's own functions (a committed
fixture made by ``tests/fixtures/make_ppi_reference.py``, and live where its venv exists) and
the coverage by simulation (a judge biased on purpose).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "NOT_RANDOM",
    "ROW_COLUMNS",
    "PPIEstimate",
    "anchored_row",
    "classical_mean_ci",
    "ppi_lambda",
    "ppi_mean",
    "ppi_mean_ci",
    "ppi_paired_difference",
]

NOT_RANDOM = "human subset not drawn at random from the judged items: PPI does not apply"


def _z(alpha: float) -> float:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    return NormalDist().inv_cdf(1 - alpha / 2)


def _vector(values: ArrayLike, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(
            f"{name} holds {int((~np.isfinite(array)).sum())} missing or infinite values"
        )
    return array


def _inputs(
    y: ArrayLike, yhat: ArrayLike, yhat_unlabeled: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y, yhat = _vector(y, "human labels"), _vector(yhat, "judge labels on the labelled items")
    yhat_unlabeled = _vector(yhat_unlabeled, "judge labels on the unlabelled items")
    if y.size != yhat.size:
        raise ValueError(
            f"{y.size} human labels but {yhat.size} judge labels on the same items: "
            "each labelled item needs both"
        )
    if y.size < 2 or yhat_unlabeled.size < 2:
        raise ValueError(
            f"PPI needs at least 2 labelled and 2 unlabelled items, got {y.size} and {yhat_unlabeled.size}"
        )
    return y, yhat, yhat_unlabeled


def ppi_lambda(y: ArrayLike, yhat: ArrayLike, yhat_unlabeled: ArrayLike) -> float:
    """PPI++'s power-tuning weight of the judge (0: ignore the judge, 1: plain PPI)."""
    y, yhat, yhat_unlabeled = _inputs(y, yhat, yhat_unlabeled)
    n, big_n = y.size, yhat_unlabeled.size
    covariance = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    variance = float(np.var(np.concatenate([yhat, yhat_unlabeled]), ddof=1))
    if variance == 0:  # a judge that says one thing for every item carries no information
        return 0.0
    return float(np.clip(covariance / ((1 + n / big_n) * variance), 0.0, 1.0))


def ppi_mean_ci(
    y: ArrayLike,
    yhat: ArrayLike,
    yhat_unlabeled: ArrayLike,
    alpha: float = 0.05,
    lam: float | None = None,
) -> tuple[float, float, float, float]:
    """(estimate, low, high, lambda): PPI++ for the mean; ``lam`` None tunes it, 1 is plain PPI."""
    y, yhat, yhat_unlabeled = _inputs(y, yhat, yhat_unlabeled)
    if lam is None:
        lam = ppi_lambda(y, yhat, yhat_unlabeled)
    estimate = float(lam * yhat_unlabeled.mean() + (y - lam * yhat).mean())
    se = float(
        np.sqrt(
            np.var(lam * yhat_unlabeled) / yhat_unlabeled.size + np.var(y - lam * yhat) / y.size
        )
    )
    z = _z(alpha)
    return estimate, estimate - z * se, estimate + z * se, float(lam)


def classical_mean_ci(values: ArrayLike, alpha: float = 0.05) -> tuple[float, float, float]:
    """(mean, low, high): the normal interval of a plain mean (ppi-python's ``classical_mean_ci``)."""
    values = _vector(values, "labels")
    if values.size < 2:
        raise ValueError(f"an interval needs at least 2 labels, got {values.size}")
    mean = float(values.mean())
    half = _z(alpha) * float(values.std(ddof=0)) / np.sqrt(values.size)
    return mean, mean - half, mean + half


@dataclass(frozen=True)
class PPIEstimate:
    """One row of a table: the judge-only, the human-only and the PPI++ estimate side by side."""

    n_human: int
    n_judge: int
    judge: float
    judge_low: float
    judge_high: float
    human: float
    human_low: float
    human_high: float
    ppi: float  # NaN where PPI does not apply
    ppi_low: float
    ppi_high: float
    ppi_lambda: float
    note: str  # "" or why there is no PPI estimate

    def as_row(self) -> dict:
        return asdict(self)


def ppi_mean(
    y: ArrayLike,
    yhat: ArrayLike,
    yhat_unlabeled: ArrayLike,
    alpha: float = 0.05,
    random_subset: bool = True,
) -> PPIEstimate:
    """The three estimates of one mean.  ``yhat_unlabeled``: the judge's labels on the items
    without a human label; the judge-only estimate is over all n + N judged items."""
    y, yhat, yhat_unlabeled = _inputs(y, yhat, yhat_unlabeled)
    judge = classical_mean_ci(np.concatenate([yhat, yhat_unlabeled]), alpha)
    human = classical_mean_ci(y, alpha)
    if random_subset:
        ppi, low, high, lam = ppi_mean_ci(y, yhat, yhat_unlabeled, alpha)
        note = ""
    else:
        ppi = low = high = lam = float("nan")
        note = NOT_RANDOM
    return PPIEstimate(
        n_human=int(y.size),
        n_judge=int(y.size + yhat_unlabeled.size),
        judge=judge[0],
        judge_low=judge[1],
        judge_high=judge[2],
        human=human[0],
        human_low=human[1],
        human_high=human[2],
        ppi=ppi,
        ppi_low=low,
        ppi_high=high,
        ppi_lambda=lam,
        note=note,
    )


def ppi_paired_difference(
    y_a: ArrayLike,
    y_b: ArrayLike,
    yhat_a: ArrayLike,
    yhat_b: ArrayLike,
    yhat_a_unlabeled: ArrayLike,
    yhat_b_unlabeled: ArrayLike,
    alpha: float = 0.05,
    random_subset: bool = True,
) -> PPIEstimate:
    """mean(b) - mean(a) for two systems judged (and, on the labelled items, human-labelled) on
    the same items: :func:`ppi_mean` of the per-item difference."""
    pairs = {
        "human labels": (y_a, y_b),
        "judge labels on the labelled items": (yhat_a, yhat_b),
        "judge labels on the unlabelled items": (yhat_a_unlabeled, yhat_b_unlabeled),
    }
    diffs = []
    for name, (a, b) in pairs.items():
        a, b = _vector(a, f"{name} of a"), _vector(b, f"{name} of b")
        if a.size != b.size:
            raise ValueError(f"paired {name}: {a.size} for a but {b.size} for b")
        diffs.append(b - a)
    return ppi_mean(*diffs, alpha=alpha, random_subset=random_subset)


#: The columns of a table row of :func:`anchored_row` (percentages x100), the arena's, DRFR's
#: and ISQA's PPI tables alike.
ROW_COLUMNS = [
    "N judged",
    "judge %",
    "judge lower",
    "judge upper",
    "n human",
    "human %",
    "PPI %",
    "PPI lower",
    "PPI upper",
    "lambda",
    "note",
]


def anchored_row(
    judge: ArrayLike,
    human: ArrayLike,
    *,
    random_subset: bool,
    unit: str,
    sample_setting: str,
    no_labels: str,
    bounded: tuple[float, float] | None = (0.0, 1.0),
) -> dict:
    """One row of a PPI table (:data:`ROW_COLUMNS`, x100): the judge-only mean over every judged
    item with its normal interval beside the PPI++ estimate (:func:`ppi_mean`) on the items that
    people labelled.  ``human`` is aligned with ``judge``, NaN where an item has no human label.

    The note says why there is no PPI estimate: ``no_labels`` where no item is labelled, the
    subset not drawn at random (``sample_setting``, e.g. "datasets.rag.human_sample: chosen",
    named), fewer than 2 labelled or unlabelled ``unit`` (e.g. "judged pairs"); and why the
    judge has no interval where every item got the same label (a zero-width one would read as
    certainty).  ``bounded``: the outcome's range, at which the judge's normal interval is cut
    (None: not cut).
    """
    judge = _vector(judge, "judge labels")
    human = np.asarray(human, dtype=float)
    if human.shape != judge.shape:
        raise ValueError(f"{human.size} human entries for {judge.size} judged items")
    low = high = np.nan
    same = judge.size >= 2 and bool(np.all(judge == judge[0]))
    if judge.size >= 2 and not same:
        _, low, high = classical_mean_ci(judge)
        if bounded is not None:  # never reported beyond the values the outcome can take
            low, high = max(low, bounded[0]), min(high, bounded[1])
    labelled = ~np.isnan(human)
    row = {
        "N judged": int(judge.size),
        "judge %": 100 * judge.mean() if judge.size else np.nan,
        "judge lower": 100 * low,
        "judge upper": 100 * high,
        "n human": int(labelled.sum()),
        "human %": 100 * float(human[labelled].mean()) if labelled.any() else np.nan,
        "PPI %": np.nan,
        "PPI lower": np.nan,
        "PPI upper": np.nan,
        "lambda": np.nan,
        "note": "",
    }
    no_spread = (
        f"every {unit[:-1] if unit.endswith('s') else unit} got {100 * judge[0]:g}: no interval "
        "(a zero-width one would read as certainty); "
        if same
        else ""
    )
    if not row["n human"]:
        row["note"] = no_spread + no_labels
    elif not random_subset:
        row["note"] = no_spread + NOT_RANDOM + f" ({sample_setting})"
    elif row["n human"] < 2 or (~labelled).sum() < 2:
        row["note"] = no_spread + f"PPI needs at least 2 labelled and 2 unlabelled {unit}"
    else:
        est = ppi_mean(human[labelled], judge[labelled], judge[~labelled])
        if est.ppi_high == est.ppi_low:  # no spread left: a zero-width normal interval
            why = (
                f"people gave all {est.n_human} labelled {unit} one label ({est.human * 100:g}) "
                "and the judge gets no weight (lambda 0)"
                if est.ppi_lambda == 0
                else "the labels have no spread"
            )
            row["note"] = (
                no_spread + why + ": no PPI interval (a zero-width one would read as certainty)"
            )
            est = replace(est, ppi_low=float("nan"), ppi_high=float("nan"))
        row.update(
            {
                "PPI %": 100 * est.ppi,
                "PPI lower": 100 * est.ppi_low,
                "PPI upper": 100 * est.ppi_high,
                "lambda": est.ppi_lambda,
            }
        )
    return row
