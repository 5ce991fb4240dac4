"""Uncertainty and significance for per-paper scores (what the ISQA paper reports without).

The ISQA paper compares summarizers by mean scores alone.  These helpers add the
missing statistics: percentile bootstrap intervals over items (papers), a paired
bootstrap interval of the mean difference, the sign-flip permutation test and a
Wilcoxon signed-rank test for "system b vs system a on the same papers", and
:func:`compare_systems`, which runs all of them on a long table.

Significance comes from :func:`sign_flip_test`, not from the bootstrap: a p-value
read off the paired bootstrap distribution is anti-conservative with few papers
(simulated under no true difference it gives p < 0.05 in 26% of cases at n = 3,
14% at n = 5, 9% at n = 10) and reads 0 when every replicate has one sign.  The
sign-flip test is exact up to :data:`EXACT_SIGN_FLIP_MAX_PAIRS` pairs, its Monte
Carlo version beyond never reports 0, and it gives no p-value below
:data:`MIN_PAIRS_FOR_TEST` pairs.

Known-answer controls (a judge or metric on items whose right verdict is known) are
tested exactly: :func:`share_test` gives the share correct with its Clopper-Pearson
interval and the one-sided exact binomial test against the chance level,
:func:`mcnemar_test` the one-sided exact McNemar test of a paired design (the same
items with and without a change), and :func:`min_items_to_separate` the smallest
number of items at which a perfect instrument can pass: n/n has p = chance**n, so at
chance 50% it takes 5 items at a one-sided alpha of 0.05 (0.5**5 = 0.031) and 6 at the
0.025 the validity table uses (:data:`isqaflow.report.validity.ALPHA`: 0.5**5 = 0.031
cannot, 0.5**6 = 0.016 can).  A bootstrap
interval of an all-correct group is [1, 1] whatever its size, so it cannot decide
such a verdict.

**Small n.**  A nominal 95% percentile bootstrap interval of a mean covers the true mean
far less often on few items (normal data, simulated with this module's
:func:`bootstrap_ci`: 51% at n = 2, 73% at 3, 81% at 4, 84% at 6, 89% at 8, 90% at 10;
``tests/unit/test_stats.py`` re-runs the simulation).  Below :data:`SMALL_N` items every table
shows such an interval with :data:`SMALL_N_MARK` and says why in its caption
(:func:`small_n_note`); every cell says its n.

**Multiple comparisons.**  :func:`holm` (family-wise error, for a table's handful of
comparisons and a judge's controls) and :func:`benjamini_hochberg` (false discovery rate,
for many-cell tables) adjust a family of p-values; the tables keep the unadjusted p beside
the adjusted one and name the correction in their captions.

Every resampling uses ``numpy.random.default_rng(seed)``: the same inputs and seed
give the same interval.  NaN values are dropped (pairwise for paired tests) and
counted, never silently turned into zeros.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

__all__ = [
    "EXACT_SIGN_FLIP_MAX_PAIRS",
    "MIN_PAIRS_FOR_TEST",
    "SMALL_N",
    "SMALL_N_MARK",
    "benjamini_hochberg",
    "bootstrap_ci",
    "compare_systems",
    "holm",
    "mcnemar_test",
    "min_items_to_separate",
    "paired_bootstrap",
    "share_test",
    "sign_flip_test",
    "small_n_note",
    "wilcoxon_signed_rank",
]

# Below six pairs no two-sided test on the signs of the differences can reach p < 0.05:
# the smallest exact sign-flip p-value with n pairs is 2 / 2**n (0.0625 at n = 5,
# 0.03125 at n = 6).  Fewer pairs get no p-value rather than one that cannot reject.
MIN_PAIRS_FOR_TEST = 6
# All 2**n sign patterns are enumerated up to this many pairs (65,536 patterns at 16);
# beyond, a seeded Monte Carlo sample of patterns.
EXACT_SIGN_FLIP_MAX_PAIRS = 16

# Below this many items a nominal 95% bootstrap interval of a mean covers at most ~89% (see
# the module docstring): such intervals carry SMALL_N_MARK and the caption's small_n_note.
SMALL_N = 10
SMALL_N_MARK = "\u2021"  # double dagger (the single dagger marks significance)

_VECTORISED_MEANS = (np.mean, np.nanmean)
_COMPARISON_COLUMNS = (
    "mean",
    "lower",
    "upper",
    "n_items",
    "baseline",
    "n_paired",
    "mean_baseline",
    "mean_paired",
    "mean_diff",
    "diff_lower",
    "diff_upper",
    "p_sign_flip",
    "wilcoxon_statistic",
    "p_wilcoxon",
)


def small_n_note(unit: str = "items") -> str:
    """The caption sentence behind :data:`SMALL_N_MARK`."""
    return (
        f"{SMALL_N_MARK} interval from fewer than {SMALL_N} {unit}: a nominal 95% percentile bootstrap "
        f"interval covers far less there (simulated: about 51% at n = 2, 73% at 3, 81% at 4, 89% at 8); "
        f"read it as indicative"
    )


def holm(p_values: ArrayLike) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error) of a family; NaN stays NaN and is
    not counted in the family.  p_(i) -> max_{j <= i} min(1, (m - j + 1) p_(j)), sorted ascending."""
    p = np.asarray(p_values, dtype=float).ravel()
    adjusted = np.full(p.shape, np.nan)
    present = np.flatnonzero(~np.isnan(p))
    m = len(present)
    if m == 0:
        return adjusted
    order = present[np.argsort(p[present], kind="stable")]
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def benjamini_hochberg(p_values: ArrayLike) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (false discovery rate); NaN stays NaN and is not
    counted.  p_(i) -> min_{j >= i} min(1, m p_(j) / j), sorted ascending."""
    p = np.asarray(p_values, dtype=float).ravel()
    adjusted = np.full(p.shape, np.nan)
    present = np.flatnonzero(~np.isnan(p))
    m = len(present)
    if m == 0:
        return adjusted
    order = present[np.argsort(p[present], kind="stable")]
    scaled = np.minimum(1.0, m * p[order] / np.arange(1, m + 1))
    adjusted[order] = np.minimum.accumulate(scaled[::-1])[::-1]
    return adjusted


def _check_resampling(rounds: int, alpha: float) -> None:
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")


def _percentile_interval(replicates: np.ndarray, alpha: float) -> tuple[float, float]:
    lower, upper = np.quantile(replicates, [alpha / 2, 1 - alpha / 2])
    return float(lower), float(upper)


def _paired(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray, int]:
    """Float arrays of the pairs with a value on both sides, and how many pairs were dropped."""
    a = np.asarray(a, dtype=float).ravel()
    b = np.asarray(b, dtype=float).ravel()
    if a.shape != b.shape:
        raise ValueError(f"paired values need equal lengths, got {a.size} and {b.size}")
    complete = ~(np.isnan(a) | np.isnan(b))
    return a[complete], b[complete], int(a.size - complete.sum())


def bootstrap_ci(
    values: ArrayLike,
    statistic: Callable[[np.ndarray], float] = np.mean,
    rounds: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> dict:
    """Percentile bootstrap interval of ``statistic`` over items resampled with replacement.

    Returns ``estimate`` (the statistic on the data), ``lower``, ``upper``, ``n``
    (values used), ``n_missing`` (NaNs dropped) and ``rounds``.  All resample
    indices are drawn at once (rounds x n); for ``np.mean``/``np.nanmean`` the
    replicates are computed in one vectorised step, any other statistic is
    applied row by row to the same resamples.  With no values everything is NaN.
    """
    _check_resampling(rounds, alpha)
    data = np.asarray(values, dtype=float).ravel()
    present = ~np.isnan(data)
    data = data[present]
    n = int(data.size)
    result = {"n": n, "n_missing": int(present.size - n), "rounds": rounds}
    if n == 0:
        return {"estimate": np.nan, "lower": np.nan, "upper": np.nan, **result}
    indices = np.random.default_rng(seed).integers(0, n, size=(rounds, n))
    if any(statistic is mean for mean in _VECTORISED_MEANS):
        replicates = data[indices].mean(axis=1)
    else:
        replicates = np.array([statistic(data[row]) for row in indices], dtype=float)
    lower, upper = _percentile_interval(replicates, alpha)
    return {"estimate": float(statistic(data)), "lower": lower, "upper": upper, **result}


def paired_bootstrap(
    a: ArrayLike,
    b: ArrayLike,
    rounds: int = 10000,
    alpha: float = 0.05,
    seed: int = 0,
) -> dict:
    """Paired bootstrap interval of the mean difference ``b - a`` over items (the same papers).

    Returns ``mean_a``, ``mean_b``, ``mean_diff``, the percentile interval
    ``lower``/``upper`` of the mean difference, ``n`` (pairs used), ``n_missing``
    (pairs with a NaN on either side) and ``rounds``.  No p-value: one read off the
    bootstrap distribution rejects too often with few pairs (see the module
    docstring); test with :func:`sign_flip_test`.
    """
    _check_resampling(rounds, alpha)
    a, b, n_missing = _paired(a, b)
    n = int(a.size)
    result = {"n": n, "n_missing": n_missing, "rounds": rounds}
    if n == 0:
        undefined = ("mean_a", "mean_b", "mean_diff", "lower", "upper")
        return {**dict.fromkeys(undefined, np.nan), **result}
    diff = b - a
    indices = np.random.default_rng(seed).integers(0, n, size=(rounds, n))
    replicates = diff[indices].mean(axis=1)
    lower, upper = _percentile_interval(replicates, alpha)
    return {
        "mean_a": float(a.mean()),
        "mean_b": float(b.mean()),
        "mean_diff": float(diff.mean()),
        "lower": lower,
        "upper": upper,
        **result,
    }


def _sign_patterns(n: int) -> np.ndarray:
    """All 2**n vectors of +1/-1 (one per row); cached up to the default exact size."""
    if n <= EXACT_SIGN_FLIP_MAX_PAIRS:
        return _cached_sign_patterns(n)
    return _build_sign_patterns(n)


def _build_sign_patterns(n: int) -> np.ndarray:
    bits = (np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n)) & 1
    patterns = (1 - 2 * bits).astype(np.float64)
    patterns.setflags(write=False)
    return patterns


_cached_sign_patterns = functools.lru_cache(maxsize=None)(_build_sign_patterns)


def sign_flip_test(
    a: ArrayLike,
    b: ArrayLike,
    rounds: int = 10000,
    seed: int = 0,
    min_pairs: int = MIN_PAIRS_FOR_TEST,
    exact_max_pairs: int = EXACT_SIGN_FLIP_MAX_PAIRS,
) -> dict:
    """Two-sided sign-flip permutation test of the mean paired difference ``b - a``.

    Under the null hypothesis (no difference between the systems) each paired
    difference is as likely to have either sign, so the observed mean difference is
    compared with the mean differences of every pattern of flipped signs; ``p_value``
    is the share of patterns whose absolute mean difference is at least the observed
    one (a relative tolerance of 1e-9 absorbs floating-point noise).

    * ``n <= exact_max_pairs``: all 2**n patterns ("exact"); the observed pattern is
      among them, so p >= 2**-n.
    * more pairs: ``rounds`` patterns drawn with ``numpy.random.default_rng(seed)``
      ("monte carlo") and ``p = (k + 1) / (rounds + 1)``, where ``k`` counts the drawn
      patterns at least as extreme; never 0, and valid at any number of rounds.
    * ``n < min_pairs``: no test ("too few pairs"), ``p_value`` NaN.

    Zero differences stay in ``n`` (flipping them changes nothing); NaN pairs are
    dropped and counted in ``n_missing``.  Returns ``mean_diff``, ``p_value``,
    ``method``, ``n``, ``n_missing`` and ``rounds`` (patterns compared).
    """
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    if min_pairs < 1:
        raise ValueError(f"min_pairs must be at least 1, got {min_pairs}")
    if not 0 <= exact_max_pairs <= 20:
        raise ValueError(
            f"exact_max_pairs must lie in [0, 20] (2**n patterns in memory), got {exact_max_pairs}"
        )
    a, b, n_missing = _paired(a, b)
    diff = b - a
    n = int(diff.size)
    result = {"mean_diff": float(diff.mean()) if n else np.nan, "n": n, "n_missing": n_missing}
    if n < min_pairs:
        return {**result, "p_value": np.nan, "method": "too few pairs", "rounds": 0}
    observed = abs(float(diff.sum()))
    threshold = observed - 1e-9 * max(1.0, float(np.abs(diff).sum()))
    if n <= exact_max_pairs:
        extreme = np.count_nonzero(np.abs(_sign_patterns(n) @ diff) >= threshold)
        return {**result, "p_value": extreme / 2**n, "method": "exact", "rounds": 2**n}
    rng = np.random.default_rng(seed)
    extreme, chunk = 0, max(1, 2**20 // n)  # bounded memory: about a million signs at a time
    for start in range(0, rounds, chunk):
        size = min(chunk, rounds - start)
        signs = 1.0 - 2.0 * rng.integers(0, 2, size=(size, n))
        extreme += int(np.count_nonzero(np.abs(signs @ diff) >= threshold))
    return {
        **result,
        "p_value": (extreme + 1) / (rounds + 1),
        "method": "monte carlo",
        "rounds": rounds,
    }


def wilcoxon_signed_rank(a: ArrayLike, b: ArrayLike) -> dict:
    """Two-sided Wilcoxon signed-rank test on the paired differences ``b - a``.

    Zero differences are dropped by the test (scipy's "wilcox" method) and reported
    in ``n_zero``; ``n`` counts all complete pairs, ``n_missing`` those dropped for
    a NaN.  All-zero differences give ``p_value`` 1.0 and ``statistic`` NaN instead
    of scipy's error; no pairs give NaN for both.
    """
    from scipy.stats import wilcoxon

    a, b, n_missing = _paired(a, b)
    diff = b - a
    n_zero = int(np.count_nonzero(diff == 0))
    result = {"n": int(diff.size), "n_zero": n_zero, "n_missing": n_missing}
    if diff.size == 0:
        return {"statistic": np.nan, "p_value": np.nan, **result}
    if n_zero == diff.size:
        return {"statistic": np.nan, "p_value": 1.0, **result}
    test = wilcoxon(diff, zero_method="wilcox", alternative="two-sided")
    return {"statistic": float(test.statistic), "p_value": float(test.pvalue), **result}


def compare_systems(
    df: pd.DataFrame,
    value: str,
    system: str,
    item: str,
    baseline: str,
    alpha: float = 0.05,
    rounds: int = 10000,
    seed: int = 0,
) -> pd.DataFrame:
    """Each non-baseline system against ``baseline``, from a long table (item x system rows).

    Per system: its mean over all its items with a bootstrap interval, then on the
    items both it and the baseline have: the baseline's mean, the mean difference
    (system - baseline) with its paired-bootstrap interval, the sign-flip test's
    p-value (NaN below :data:`MIN_PAIRS_FOR_TEST` pairs) and the Wilcoxon
    signed-rank test.  Every system is resampled with the same ``seed``, so a row
    does not depend on which other systems are in the table.  Indexed by system.
    """
    duplicated = df.duplicated([item, system])
    if duplicated.any():
        first = df.loc[duplicated, [item, system]].iloc[0].tolist()
        raise ValueError(f"more than one {value!r} for ({item}, {system}) = {first}")
    wide = df.pivot(index=item, columns=system, values=value).astype(float)
    if baseline not in wide.columns:
        raise ValueError(f"baseline {baseline!r} is not among the systems {list(wide.columns)}")
    rows = []
    for name in (s for s in wide.columns if s != baseline):
        own = bootstrap_ci(wide[name], rounds=rounds, alpha=alpha, seed=seed)
        paired = paired_bootstrap(wide[baseline], wide[name], rounds=rounds, alpha=alpha, seed=seed)
        flips = sign_flip_test(wide[baseline], wide[name], rounds=rounds, seed=seed)
        signed_rank = wilcoxon_signed_rank(wide[baseline], wide[name])
        rows.append(
            {
                system: name,
                "mean": own["estimate"],
                "lower": own["lower"],
                "upper": own["upper"],
                "n_items": own["n"],
                "baseline": baseline,
                "n_paired": paired["n"],
                "mean_baseline": paired["mean_a"],
                "mean_paired": paired["mean_b"],
                "mean_diff": paired["mean_diff"],
                "diff_lower": paired["lower"],
                "diff_upper": paired["upper"],
                "p_sign_flip": flips["p_value"],
                "wilcoxon_statistic": signed_rank["statistic"],
                "p_wilcoxon": signed_rank["p_value"],
            }
        )
    return pd.DataFrame(rows, columns=[system, *_COMPARISON_COLUMNS]).set_index(system)


def share_test(
    n_correct: int, n: int, chance: float, alpha: float = 0.05, confidence: float = 0.95
) -> dict:
    """Share correct with its exact interval and the one-sided exact binomial test against chance.

    ``share`` = n_correct / n; ``lower``/``upper`` the two-sided ``confidence``
    Clopper-Pearson interval (``scipy.stats.binomtest(...).proportion_ci(method="exact")``);
    ``p_value`` the one-sided exact binomial test of "the share exceeds ``chance``"
    (``alternative="greater"``: P(X >= n_correct) for X ~ Binomial(n, chance)).
    ``separates`` is ``p_value < alpha``.  A chance level of 1 cannot be exceeded:
    ``p_value`` is 1 (never separates).  With n = 0 everything but n is NaN and
    ``separates`` False.  At chance 0.5: 3/3 gives p = 0.125, 5/5 gives 0.031 (separates
    at alpha 0.05, not at the validity table's 0.025), 6/6 gives 0.016 (separates at
    both), 6/7 gives 0.0625 (at neither).
    """
    from scipy.stats import binomtest

    if not 0.0 <= chance <= 1.0:
        raise ValueError(f"chance must lie in [0, 1], got {chance}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    if n < 0 or not 0 <= n_correct <= max(n, 0):
        raise ValueError(f"need 0 <= n_correct <= n, got {n_correct} of {n}")
    if n == 0:
        return {
            "n": 0,
            "n_correct": 0,
            "share": np.nan,
            "lower": np.nan,
            "upper": np.nan,
            "chance": float(chance),
            "p_value": np.nan,
            "separates": False,
        }
    test = binomtest(int(n_correct), int(n), p=float(chance), alternative="greater")
    interval = binomtest(int(n_correct), int(n)).proportion_ci(
        confidence_level=confidence, method="exact"
    )
    p_value = 1.0 if chance >= 1.0 else float(test.pvalue)
    return {
        "n": int(n),
        "n_correct": int(n_correct),
        "share": n_correct / n,
        "lower": float(interval.low),
        "upper": float(interval.high),
        "chance": float(chance),
        "p_value": p_value,
        "separates": bool(p_value < alpha),
    }


def mcnemar_test(after: ArrayLike, before: ArrayLike, alpha: float = 0.05) -> dict:
    """One-sided exact McNemar test: are items right more often ``after`` than ``before``?

    ``after`` and ``before`` are per-item booleans of the same items (e.g. answered
    right with and without inserted evidence).  Only discordant pairs carry
    information: ``gained`` = right after and not before, ``lost`` = the reverse.
    Under no effect each discordant pair is as likely to be either, so the exact test
    is the binomial test of ``gained`` out of ``gained + lost`` at 1/2
    (``scipy.stats.binomtest``, ``alternative="greater"``; statsmodels'
    ``mcnemar(exact=True)`` is the two-sided version of the same binomial test).  No
    discordant pair gives ``p_value`` 1.  ``separates`` is ``p_value < alpha``.
    """
    from scipy.stats import binomtest

    after = np.asarray(after, dtype=bool).ravel()
    before = np.asarray(before, dtype=bool).ravel()
    if after.shape != before.shape:
        raise ValueError(f"paired values need equal lengths, got {after.size} and {before.size}")
    gained = int(np.count_nonzero(after & ~before))
    lost = int(np.count_nonzero(~after & before))
    discordant = gained + lost
    p_value = (
        1.0
        if discordant == 0
        else float(binomtest(gained, discordant, 0.5, alternative="greater").pvalue)
    )
    return {
        "n": int(after.size),
        "gained": gained,
        "lost": lost,
        "p_value": p_value,
        "separates": bool(p_value < alpha),
    }


def min_items_to_separate(chance: float, alpha: float = 0.05) -> int | None:
    """The smallest n at which n/n correct passes :func:`share_test` (None at chance 1).

    n/n has p = chance**n, so n is the smallest integer with chance**n < alpha: at chance
    0.5, 5 at alpha 0.05 (0.031) and 6 at the validity table's 0.025 (0.016); at chance
    1/3, 3 at alpha 0.05 (0.037) and 4 at 0.025 (0.012); a paired McNemar control needs
    that many discordant pairs at 1/2.
    """
    if not 0.0 <= chance <= 1.0:
        raise ValueError(f"chance must lie in [0, 1], got {chance}")
    if chance >= 1.0:
        return None
    if chance == 0.0:
        return 1
    n = 1
    while chance**n >= alpha:
        n += 1
    return n
