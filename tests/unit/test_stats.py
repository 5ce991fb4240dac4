from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import wilcoxon

from isqaflow.stats import (
    EXACT_SIGN_FLIP_MAX_PAIRS,
    MIN_PAIRS_FOR_TEST,
    bootstrap_ci,
    compare_systems,
    paired_bootstrap,
    sign_flip_test,
    wilcoxon_signed_rank,
)


def test_bootstrap_ci_is_reproducible_under_a_seed_and_varies_with_it():
    values = np.arange(1.0, 21.0)
    first = bootstrap_ci(values, seed=7)
    assert bootstrap_ci(values, seed=7) == first
    other = bootstrap_ci(values, seed=8)
    assert (other["lower"], other["upper"]) != (first["lower"], first["upper"])
    assert first["estimate"] == other["estimate"] == 10.5
    assert first["n"] == 20 and first["n_missing"] == 0 and first["rounds"] == 1000


def test_bootstrap_ci_contains_the_mean_and_shrinks_with_more_data():
    rng = np.random.default_rng(123)
    small = bootstrap_ci(rng.normal(0.5, 0.2, size=20))
    large = bootstrap_ci(rng.normal(0.5, 0.2, size=2000))
    for interval in (small, large):
        assert interval["lower"] < interval["estimate"] < interval["upper"]
    # Width scales as 1/sqrt(n): 100x the data, about a tenth of the width.
    small_width = small["upper"] - small["lower"]
    large_width = large["upper"] - large["lower"]
    assert 0.05 < large_width / small_width < 0.2


def test_bootstrap_ci_on_two_values_matches_the_hand_computed_distribution():
    # Resampled means of [0, 1] are 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4.
    wide = bootstrap_ci([0.0, 1.0], rounds=4000, alpha=0.05)
    assert (wide["lower"], wide["upper"]) == (0.0, 1.0)
    central = bootstrap_ci([0.0, 1.0], rounds=4000, alpha=0.6)  # the 30% and 70% quantiles
    assert (central["lower"], central["upper"]) == (0.5, 0.5)


def test_bootstrap_ci_of_constant_values_has_zero_width():
    interval = bootstrap_ci([2.5] * 10)
    assert interval["estimate"] == interval["lower"] == interval["upper"] == 2.5


def test_bootstrap_ci_drops_and_counts_nan():
    interval = bootstrap_ci([1.0, np.nan, 3.0, np.nan])
    assert interval["estimate"] == 2.0
    assert interval["n"] == 2 and interval["n_missing"] == 2
    empty = bootstrap_ci([np.nan])
    assert np.isnan(empty["estimate"]) and np.isnan(empty["lower"]) and empty["n"] == 0


def test_bootstrap_ci_general_statistic_uses_the_same_resamples_as_the_fast_path():
    values = [0.1, 0.4, 0.35, 0.8, 0.9, 0.2, 0.55]
    fast = bootstrap_ci(values, np.mean, seed=3)
    looped = bootstrap_ci(values, lambda sample: float(np.mean(sample)), seed=3)
    assert looped["lower"] == pytest.approx(fast["lower"])
    assert looped["upper"] == pytest.approx(fast["upper"])
    median = bootstrap_ci(values, np.median, seed=3)
    assert median["estimate"] == 0.4
    assert median["lower"] <= 0.4 <= median["upper"]


def test_bootstrap_ci_rejects_bad_parameters():
    with pytest.raises(ValueError, match="rounds"):
        bootstrap_ci([1.0, 2.0], rounds=0)
    with pytest.raises(ValueError, match="alpha"):
        bootstrap_ci([1.0, 2.0], alpha=1.5)


def test_paired_bootstrap_shifted_by_one():
    a = np.linspace(0.2, 0.7, 12)
    result = paired_bootstrap(a, a + 1)
    assert result["mean_diff"] == pytest.approx(1.0)
    assert result["lower"] == pytest.approx(1.0) and result["upper"] == pytest.approx(1.0)
    assert result["mean_a"] == pytest.approx(0.45) and result["mean_b"] == pytest.approx(1.45)
    assert result["n"] == 12 and result["n_missing"] == 0
    # the interval only: significance is the sign-flip test's (a bootstrap p read 0 here)
    assert "p_value" not in result


def test_paired_bootstrap_identical_systems_have_a_zero_interval():
    a = [0.3, 0.5, 0.9, 0.1]
    result = paired_bootstrap(a, a)
    assert result["mean_diff"] == 0.0
    assert result["lower"] == result["upper"] == 0.0


def test_paired_bootstrap_mixed_differences():
    # Differences b - a = [1, -1, 1, 1]: mean 0.5, an interval reaching 0 with four papers.
    a = [0.0, 1.0, 0.0, 0.0]
    b = [1.0, 0.0, 1.0, 1.0]
    result = paired_bootstrap(a, b, seed=1)
    assert result["mean_diff"] == 0.5
    assert result["lower"] <= 0.5 <= result["upper"]
    assert result["lower"] <= 0.0
    assert result == paired_bootstrap(a, b, seed=1)


def test_paired_bootstrap_drops_pairs_with_nan():
    result = paired_bootstrap([1.0, np.nan, 3.0, 4.0], [2.0, 2.0, np.nan, 6.0])
    assert result["n"] == 2 and result["n_missing"] == 2
    assert result["mean_a"] == 2.5 and result["mean_b"] == 4.0 and result["mean_diff"] == 1.5
    with pytest.raises(ValueError, match="equal lengths"):
        paired_bootstrap([1.0, 2.0], [1.0])


# ----------------------------------------------------------------------------- sign-flip test


def test_sign_flip_exact_by_hand():
    # Six differences of size 1, five positive: |observed sum| = 4.  A pattern of flips
    # gives sum 6 - 2m with m negative products; |6 - 2m| >= 4 for m in {0, 1, 5, 6}:
    # 1 + 6 + 6 + 1 = 14 of the 2**6 patterns.
    result = sign_flip_test([0.0] * 6, [1, 1, 1, 1, 1, -1])
    assert result["p_value"] == 14 / 64
    assert result["method"] == "exact" and result["rounds"] == 64
    assert result["n"] == 6 and result["mean_diff"] == pytest.approx(4 / 6)
    # all six positive: only the observed pattern and its mirror image are as extreme
    assert sign_flip_test([0.0] * 6, [2.0] * 6)["p_value"] == 2 / 64
    # differences 1, 2, -3, 4, 5, 6 (sum 15 of 21): |sum| >= 15 when the flipped magnitudes
    # sum to <= 3 ({}, {1}, {2}, {3}, {1, 2}) or >= 18 (their complements): 10 of 64
    assert sign_flip_test([0.0] * 6, [1, 2, -3, 4, 5, 6])["p_value"] == 10 / 64


def test_sign_flip_keeps_zero_differences_in_n():
    # five +1 and one 0: |sum| = 5 needs the five signs equal (2 ways) x the zero's sign (2 ways)
    result = sign_flip_test([0.0] * 6, [1, 1, 1, 1, 1, 0])
    assert result["n"] == 6 and result["p_value"] == 4 / 64
    assert sign_flip_test([0.3] * 8, [0.3] * 8)["p_value"] == 1.0  # no difference at all


def test_sign_flip_is_exact_brute_force_on_random_data():
    rng = np.random.default_rng(5)
    for n in (6, 9, 12):
        a, b = rng.normal(size=n), rng.normal(0.4, 1.0, size=n)
        diff = b - a
        extreme = 0
        for code in range(2**n):
            signs = np.array([-1.0 if code >> i & 1 else 1.0 for i in range(n)])
            extreme += abs(float(signs @ diff)) >= abs(float(diff.sum())) - 1e-12
        assert sign_flip_test(a, b)["p_value"] == pytest.approx(extreme / 2**n)


def test_sign_flip_gives_no_p_value_below_the_minimum():
    assert MIN_PAIRS_FOR_TEST == 6
    for n in range(MIN_PAIRS_FOR_TEST):
        result = sign_flip_test([0.0] * n, [1.0] * n)
        assert (
            np.isnan(result["p_value"]) and result["method"] == "too few pairs" and result["n"] == n
        )
    # pairs with a NaN do not count towards the minimum
    result = sign_flip_test([0.0] * 6, [1.0] * 5 + [np.nan])
    assert np.isnan(result["p_value"]) and result["n"] == 5 and result["n_missing"] == 1
    assert sign_flip_test([0.0] * 3, [1.0] * 3, min_pairs=3)["p_value"] == 2 / 8


def test_sign_flip_monte_carlo_beyond_the_exact_limit_is_seeded_and_never_zero():
    n = EXACT_SIGN_FLIP_MAX_PAIRS + 1
    shifted = sign_flip_test(np.zeros(30), np.ones(30), rounds=999)
    assert shifted["method"] == "monte carlo"
    assert shifted["p_value"] == 1 / 1000  # (0 + 1) / (999 + 1): never 0
    rng = np.random.default_rng(11)
    a, b = rng.normal(size=n), rng.normal(0.3, 1.0, size=n)
    first = sign_flip_test(a, b, rounds=20000, seed=3)
    assert first["method"] == "monte carlo" and first["rounds"] == 20000
    assert sign_flip_test(a, b, rounds=20000, seed=3) == first
    assert sign_flip_test(a, b, rounds=20000, seed=4)["p_value"] != first["p_value"]
    # the sampled p-value estimates the exact one (all 2**17 patterns)
    exact = sign_flip_test(a, b, exact_max_pairs=n)
    assert exact["method"] == "exact"
    assert first["p_value"] == pytest.approx(exact["p_value"], abs=0.01)


@pytest.mark.parametrize(("n", "rounds"), [(6, None), (10, None), (16, None), (25, 999)])
def test_sign_flip_false_positive_rate_under_the_null(n, rounds):
    # No true difference (normal differences): p < 0.05 in at most 5% of the data sets,
    # up to sampling noise (3 standard errors over 1,000 data sets: 0.021).  The old
    # paired-bootstrap p-value gave 26% at n = 3, 14% at n = 5 and 9% at n = 10.
    sets = 1000
    rng = np.random.default_rng(2024 + n)
    kwargs = {} if rounds is None else {"rounds": rounds}
    rejections = sum(
        sign_flip_test(np.zeros(n), rng.normal(size=n), seed=i, **kwargs)["p_value"] < 0.05
        for i in range(sets)
    )
    assert rejections / sets <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / sets)


def test_sign_flip_detects_a_real_shift():
    rng = np.random.default_rng(7)
    detected = sum(
        sign_flip_test(np.zeros(10), rng.normal(1.5, 1.0, size=10))["p_value"] < 0.05
        for _ in range(200)
    )
    assert detected / 200 > 0.9


def test_sign_flip_rejects_bad_parameters():
    with pytest.raises(ValueError, match="rounds"):
        sign_flip_test([0.0] * 20, [1.0] * 20, rounds=0)
    with pytest.raises(ValueError, match="min_pairs"):
        sign_flip_test([0.0] * 6, [1.0] * 6, min_pairs=0)
    with pytest.raises(ValueError, match="exact_max_pairs"):
        sign_flip_test([0.0] * 6, [1.0] * 6, exact_max_pairs=30)
    with pytest.raises(ValueError, match="equal lengths"):
        sign_flip_test([1.0, 2.0], [1.0])


def test_wilcoxon_all_zero_differences_gives_p_one():
    result = wilcoxon_signed_rank([0.2, 0.4, 0.6], [0.2, 0.4, 0.6])
    assert result["p_value"] == 1.0 and np.isnan(result["statistic"])
    assert result["n"] == 3 and result["n_zero"] == 3


def test_wilcoxon_without_pairs_gives_nan():
    result = wilcoxon_signed_rank([np.nan], [1.0])
    assert np.isnan(result["p_value"]) and np.isnan(result["statistic"])
    assert result["n"] == 0 and result["n_missing"] == 1


def test_wilcoxon_matches_hand_computation_and_scipy():
    # Differences 1, 2, -3, 4, 5, 6: ranks 1..6, negative rank sum 3 = the statistic.
    # Exact two-sided p: subsets of {1..6} with sum <= 3 are {}, {1}, {2}, {3}, {1,2},
    # so p = 2 * 5 / 2**6 = 0.15625.  A seventh, zero difference is dropped.
    a = [0.0] * 7
    b = [1.0, 2.0, -3.0, 4.0, 5.0, 6.0, 0.0]
    result = wilcoxon_signed_rank(a, b)
    assert result["statistic"] == 3.0
    assert result["p_value"] == pytest.approx(0.15625)
    assert result["n"] == 7 and result["n_zero"] == 1
    reference = wilcoxon(np.subtract(b, a), zero_method="wilcox", alternative="two-sided")
    assert result["statistic"] == reference.statistic
    assert result["p_value"] == pytest.approx(reference.pvalue)


def _long_table() -> pd.DataFrame:
    base = {"p1": 0.2, "p2": 0.4, "p3": 0.6, "p4": 0.8}
    better = {paper: score + 0.1 for paper, score in base.items()}
    partial = {"p1": 0.2, "p2": 0.4, "p3": 0.6}  # p4 missing: paired on three papers
    rows = [
        {"paper": paper, "system": name, "score": score}
        for name, scores in (("base", base), ("better", better), ("partial", partial))
        for paper, score in scores.items()
    ]
    return pd.DataFrame(rows)


def test_compare_systems_on_a_tiny_long_table():
    table = compare_systems(
        _long_table(), value="score", system="system", item="paper", baseline="base", rounds=2000
    )
    assert list(table.index) == ["better", "partial"]
    assert table.index.name == "system"
    better, partial = table.loc["better"], table.loc["partial"]
    assert better["mean"] == pytest.approx(0.6)
    assert better["lower"] < 0.6 < better["upper"]
    assert better["n_items"] == 4 and better["n_paired"] == 4
    assert better["mean_baseline"] == pytest.approx(0.5)
    assert better["mean_diff"] == pytest.approx(0.1)
    assert better["diff_lower"] == pytest.approx(0.1) and better["diff_upper"] == pytest.approx(0.1)
    assert np.isnan(better["p_sign_flip"])  # four papers: below the minimum for a test
    # Four positive differences: exact two-sided Wilcoxon p = 2 / 2**4.
    assert better["wilcoxon_statistic"] == 0.0
    assert better["p_wilcoxon"] == pytest.approx(0.125)
    assert partial["n_items"] == 3 and partial["n_paired"] == 3
    assert partial["mean"] == pytest.approx(0.4) and partial["mean_baseline"] == pytest.approx(0.4)
    assert partial["mean_diff"] == 0.0
    assert np.isnan(partial["p_sign_flip"]) and partial["p_wilcoxon"] == 1.0


def test_compare_systems_sign_flip_p_value_with_enough_papers():
    papers = [f"p{i}" for i in range(7)]
    rows = [{"paper": p, "system": "base", "score": 0.1 * i} for i, p in enumerate(papers)]
    rows += [
        {"paper": p, "system": "better", "score": 0.1 * i + 0.05} for i, p in enumerate(papers)
    ]
    table = compare_systems(
        pd.DataFrame(rows), "score", "system", "paper", baseline="base", rounds=500
    )
    assert table.loc["better", "p_sign_flip"] == 2 / 2**7  # every difference positive, exact


def test_compare_systems_rejects_unknown_baseline_and_duplicates():
    table = _long_table()
    with pytest.raises(ValueError, match="baseline 'missing'"):
        compare_systems(table, "score", "system", "paper", baseline="missing")
    with pytest.raises(ValueError, match="more than one"):
        compare_systems(pd.concat([table, table.iloc[:1]]), "score", "system", "paper", "base")


# ------------------------------------------------------------------- exact tests of known-answer controls
def test_share_test_known_answers():
    from isqaflow.stats import share_test

    # 3/3 at chance 0.5 does not separate (p = 0.125), 6/6 does (0.0156), 6/7 does not (0.0625)
    assert (
        share_test(3, 3, 0.5)["p_value"] == pytest.approx(0.125)
        and not share_test(3, 3, 0.5)["separates"]
    )
    assert (
        share_test(6, 6, 0.5)["p_value"] == pytest.approx(1 / 64)
        and share_test(6, 6, 0.5)["separates"]
    )
    assert (
        share_test(6, 7, 0.5)["p_value"] == pytest.approx(8 / 128)
        and not share_test(6, 7, 0.5)["separates"]
    )
    # Clopper-Pearson: x = 0 and x = n have closed forms; 7/10 and 1/3 against published values
    assert share_test(6, 6, 0.5)["lower"] == pytest.approx(0.025 ** (1 / 6))
    assert share_test(0, 6, 0.5)["upper"] == pytest.approx(1 - 0.025 ** (1 / 6))
    seven = share_test(7, 10, 0.5)
    assert (seven["lower"], seven["upper"]) == (
        pytest.approx(0.3475, abs=1e-4),
        pytest.approx(0.9333, abs=1e-4),
    )
    one = share_test(1, 3, 0.5)
    assert (one["lower"], one["upper"]) == (
        pytest.approx(0.0084, abs=1e-4),
        pytest.approx(0.9057, abs=1e-4),
    )
    # chance 1/3 (one random order of the arena's self control): 3/3 gives (1/3)**3 = 0.037
    assert share_test(3, 3, 1 / 3)["separates"]
    assert share_test(4, 4, 1.0)["p_value"] == 1.0 and not share_test(4, 4, 1.0)["separates"]
    empty = share_test(0, 0, 0.5)
    assert empty["n"] == 0 and np.isnan(empty["share"]) and not empty["separates"]
    with pytest.raises(ValueError, match="n_correct <= n"):
        share_test(4, 3, 0.5)
    with pytest.raises(ValueError, match="chance"):
        share_test(1, 3, 1.5)


def test_min_items_to_separate():
    from isqaflow.stats import min_items_to_separate, share_test

    assert min_items_to_separate(0.5) == 5  # 0.5**5 = 0.031 < 0.05 <= 0.5**4
    assert min_items_to_separate(1 / 3) == 3
    assert min_items_to_separate(0.5, alpha=0.025) == 6  # what the two-sided 95% interval needs
    assert min_items_to_separate(1.0) is None
    for chance in (0.2, 0.5, 0.7):
        n = min_items_to_separate(chance)
        assert (
            share_test(n, n, chance)["separates"]
            and not share_test(n - 1, n - 1, chance)["separates"]
        )


def test_mcnemar_exact_on_a_constructed_table():
    from scipy.stats import binomtest

    from isqaflow.stats import mcnemar_test

    # 2 x 2 table of (after, before): 9 gained, 2 lost, 4 right both times, 5 wrong both times
    after = [True] * 9 + [False] * 2 + [True] * 4 + [False] * 5
    before = [False] * 9 + [True] * 2 + [True] * 4 + [False] * 5
    result = mcnemar_test(after, before)
    assert (result["n"], result["gained"], result["lost"]) == (20, 9, 2)
    # P(X >= 9), X ~ Binomial(11, 1/2) = (C(11,9) + C(11,10) + C(11,11)) / 2**11 = 67 / 2048
    assert result["p_value"] == pytest.approx(67 / 2048) and result["separates"]
    # the two-sided version is statsmodels' mcnemar(exact=True): twice the smaller tail
    assert binomtest(9, 11, 0.5).pvalue == pytest.approx(2 * 67 / 2048)
    # the concordant items do not matter; no discordant item: p = 1
    assert mcnemar_test(after[:11], before[:11])["p_value"] == result["p_value"]
    assert mcnemar_test([True, False], [True, False])["p_value"] == 1.0
    with pytest.raises(ValueError, match="equal lengths"):
        mcnemar_test([True], [True, False])


def test_holm_and_benjamini_hochberg_adjust_a_family():
    from scipy.stats import false_discovery_control

    from isqaflow.stats import benjamini_hochberg, holm

    p = [0.01, 0.04, float("nan"), 0.03, 0.005]
    # Holm by hand over the 4 present: sorted 0.005, 0.01, 0.03, 0.04 -> 0.02, 0.03, 0.06, 0.06
    np.testing.assert_allclose(holm(p), [0.03, 0.06, np.nan, 0.06, 0.02])
    present = np.array([0.01, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(
        benjamini_hochberg(p)[[0, 1, 3, 4]], false_discovery_control(present)
    )
    assert np.isnan(benjamini_hochberg(p)[2]) and np.isnan(holm([np.nan])).all()
    assert holm([0.9, 0.8]).tolist() == [1.0, 1.0]


def test_small_n_bootstrap_coverage_is_as_the_docstring_says():
    """The figures behind SMALL_N: coverage of a nominal 95% percentile interval of a normal
    mean, by simulation with bootstrap_ci (51% at n = 2, 73% at 3, 81% at 4, 89% at 8)."""
    from isqaflow.stats import SMALL_N, SMALL_N_MARK, small_n_note

    rng = np.random.default_rng(0)
    for n, stated in ((2, 0.51), (3, 0.73), (4, 0.81), (8, 0.89)):
        hits = 0
        for r in range(1000):
            ci = bootstrap_ci(rng.normal(size=n), rounds=400, seed=r)
            hits += ci["lower"] <= 0.0 <= ci["upper"]
        assert hits / 1000 == pytest.approx(stated, abs=0.04), n
    assert SMALL_N == 10 and SMALL_N_MARK in small_n_note() and "fewer than 10" in small_n_note()


def test_docstrings_state_the_items_a_perfect_instrument_needs():
    """The module's figures are the function's: 5 items at alpha 0.05, 6 at the validity
    table's 0.025 (issue 30: the docstring said 5 while the table needs 6)."""
    from isqaflow import stats
    from isqaflow.report.validity import ALPHA
    from isqaflow.stats import min_items_to_separate

    assert (min_items_to_separate(0.5, 0.05), min_items_to_separate(0.5, ALPHA)) == (5, 6)
    doc = " ".join(stats.__doc__.split())
    assert (
        "it takes 5 items at a one-sided alpha of 0.05" in doc and f"and 6 at the {ALPHA:g}" in doc
    )
    assert "6 at the validity table's 0.025" in " ".join(
        stats.min_items_to_separate.__doc__.split()
    )
