"""Minimum detectable effects and the items a claim needs (power of a paired comparison).

"No significant difference" on 30 items says little; "no difference larger than 25 points"
says how little.  For a paired design (two systems on the same items) with per-item
differences of standard deviation ``sd``, a two-sided test at level ``alpha`` detects a true
mean difference ``delta`` with probability ``power`` when

    delta >= (z_{1 - alpha/2} + z_{power}) * sd / sqrt(n)       (the normal approximation)

-- the minimum detectable effect (MDE) at n items, and, turned round, the n a named difference
needs: ceil(((z_{1 - alpha/2} + z_{power}) * sd / delta)^2).  The normal approximation is that of
the sign-flip and McNemar tests at moderate n (both are tests of the mean paired difference);
below :data:`isqaflow.stats.MIN_PAIRS_FOR_TEST` pairs no test is run, so no MDE is given.

``sd`` is the spread the tests' null distribution has: the root mean square of the paired
differences, sqrt(mean(d_i^2)) -- the sign-flip test's null variance of the mean is
sum(d_i^2) / n^2 and McNemar's is (only_a + only_b) / n^2, the same thing for binary outcomes
(the share of discordant items).  It is a little larger than the centred sd, so the MDE errs
on the large side; simulated with the exact McNemar test at n = 200 and 30% discordant items,
a true difference of one MDE is found 77% of the time (``tests/unit/test_power.py``).

The per-item sd comes from the run's own records after it (the observed paired differences)
and from a stated prior before it (``power.prior_sd`` in config/schema.yaml: the plan's
numbers are as good as that prior, and the dry run says which it used).  Where every item's
difference is the same (sd 0, e.g. two systems never discordant) the observed sd says nothing
about the next items and the MDE is not given (NaN), never reported as 0.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike

from isqaflow.stats import MIN_PAIRS_FOR_TEST

__all__ = ["ALPHA", "POWER", "mde", "n_for_difference", "paired_mde", "z_sum"]

ALPHA, POWER = 0.05, 0.8  # the conventional two-sided 5% and 80% power


def z_sum(alpha: float = ALPHA, power: float = POWER) -> float:
    """z_{1 - alpha/2} + z_{power} (2.80 at 5% and 80%).  The standard library's normal
    quantile, not scipy's: the dry run prints the MDEs on the submit host, whose environment
    holds Snakemake only (docs/paper-scale.md, step 1)."""
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must lie in (0, 1), got {alpha} and {power}")
    normal = NormalDist()
    return normal.inv_cdf(1 - alpha / 2) + normal.inv_cdf(power)


def mde(sd: float, n: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest true mean difference n paired items detect (NaN below the test's minimum
    number of pairs or without a positive sd)."""
    if n < MIN_PAIRS_FOR_TEST or not np.isfinite(sd) or sd <= 0:
        return float("nan")
    return z_sum(alpha, power) * float(sd) / math.sqrt(n)


def n_for_difference(
    difference: float, sd: float, alpha: float = ALPHA, power: float = POWER
) -> int:
    """The paired items a true mean difference ``difference`` needs (at least the test's minimum)."""
    if difference <= 0 or sd <= 0:
        raise ValueError(f"a difference and an sd must be positive, got {difference} and {sd}")
    return max(MIN_PAIRS_FOR_TEST, math.ceil((z_sum(alpha, power) * sd / difference) ** 2))


def paired_mde(a: ArrayLike, b: ArrayLike, alpha: float = ALPHA, power: float = POWER) -> float:
    """:func:`mde` of the observed paired differences ``b - a`` (their root mean square)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired outcomes need equal lengths, got {a.size} and {b.size}")
    if a.size < 2:
        return float("nan")
    return mde(float(np.sqrt(np.mean((b - a) ** 2))), a.size, alpha, power)
