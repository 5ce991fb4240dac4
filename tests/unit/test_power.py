from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest

from isqaflow.power import mde, n_for_difference, paired_mde, z_sum
from isqaflow.stats import MIN_PAIRS_FOR_TEST


def test_z_sum_is_the_textbook_2_80_at_5_percent_and_80_percent_power():
    assert z_sum() == pytest.approx(1.959964 + 0.841621, abs=1e-5)
    assert z_sum(0.05, 0.9) == pytest.approx(1.959964 + 1.281552, abs=1e-5)
    with pytest.raises(ValueError, match="alpha and power"):
        z_sum(0.05, 1.0)


def test_mde_and_the_n_a_difference_needs_are_inverses():
    # sd 0.5 on 100 pairs: 2.8016 * 0.5 / 10
    assert mde(0.5, 100) == pytest.approx(0.140084, abs=1e-5)
    for difference in (0.02, 0.05, 0.1, 0.3):
        n = n_for_difference(difference, 0.5)
        assert mde(0.5, n) <= difference < mde(0.5, n - 1)
    assert n_for_difference(0.9, 0.1) == MIN_PAIRS_FOR_TEST  # never below a testable n
    with pytest.raises(ValueError, match="must be positive"):
        n_for_difference(0.0, 0.5)


def test_no_mde_without_a_test_or_without_spread():
    assert math.isnan(mde(0.5, MIN_PAIRS_FOR_TEST - 1))
    assert math.isnan(paired_mde([1, 0, 1, 1, 0, 1, 0], [1, 0, 1, 1, 0, 1, 0]))  # never discordant
    # binary outcomes: the root mean square of the differences is sqrt(share discordant)
    a = [1, 1, 0, 0, 1, 0, 1, 0, 1, 1]
    b = [0, 1, 1, 0, 1, 0, 1, 1, 1, 1]
    assert paired_mde(a, b) == pytest.approx(z_sum() * math.sqrt(3 / 10) / math.sqrt(10))
    with pytest.raises(ValueError, match="equal lengths"):
        paired_mde([1, 0], [1])


def _mcnemar_power(difference: float, discordant: float, n: int, rounds: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    only_b, only_a = (discordant + difference) / 2, (discordant - difference) / 2
    rejected = 0
    for _ in range(rounds):
        u = rng.random(n)
        k_b, k_a = int((u < only_b).sum()), int(((u >= only_b) & (u < only_b + only_a)).sum())
        rejected += k_a + k_b > 0 and binomtest(k_b, k_a + k_b, 0.5).pvalue < 0.05
    return rejected / rounds


def test_a_true_difference_of_one_mde_is_found_about_80_percent_of_the_time():
    # the exact McNemar test (the DRFR's) at n = 200 with 30% discordant questions, 600 seeded runs
    n, discordant = 200, 0.3
    at_mde = mde(math.sqrt(discordant), n)
    assert at_mde == pytest.approx(0.1085, abs=1e-3)
    assert 0.70 <= _mcnemar_power(at_mde, discordant, n, 600, seed=5) <= 0.88
    assert _mcnemar_power(at_mde / 2, discordant, n, 600, seed=6) < 0.40
    assert _mcnemar_power(min(discordant, 2 * at_mde), discordant, n, 600, seed=7) > 0.97
