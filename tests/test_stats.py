from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import wilcoxon

from isqaflow.stats import (
    bootstrap_ci,
    compare_systems,
    paired_bootstrap,
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


def test_paired_bootstrap_shifted_by_one_is_significant():
    a = np.linspace(0.2, 0.7, 12)
    result = paired_bootstrap(a, a + 1)
    assert result["mean_diff"] == pytest.approx(1.0)
    assert result["lower"] == pytest.approx(1.0) and result["upper"] == pytest.approx(1.0)
    assert result["mean_a"] == pytest.approx(0.45) and result["mean_b"] == pytest.approx(1.45)
    assert result["p_value"] == 0.0
    assert result["n"] == 12 and result["n_missing"] == 0


def test_paired_bootstrap_identical_systems_have_p_one():
    a = [0.3, 0.5, 0.9, 0.1]
    result = paired_bootstrap(a, a)
    assert result["mean_diff"] == 0.0
    assert result["lower"] == result["upper"] == 0.0
    assert result["p_value"] == 1.0


def test_paired_bootstrap_mixed_differences():
    # Differences b - a = [1, -1, 1, 1]: mean 0.5, not significant with four papers.
    a = [0.0, 1.0, 0.0, 0.0]
    b = [1.0, 0.0, 1.0, 1.0]
    result = paired_bootstrap(a, b, seed=1)
    assert result["mean_diff"] == 0.5
    assert result["lower"] <= 0.5 <= result["upper"]
    assert result["lower"] <= 0.0
    assert 0.05 < result["p_value"] <= 1.0
    assert result == paired_bootstrap(a, b, seed=1)


def test_paired_bootstrap_drops_pairs_with_nan():
    result = paired_bootstrap([1.0, np.nan, 3.0, 4.0], [2.0, 2.0, np.nan, 6.0])
    assert result["n"] == 2 and result["n_missing"] == 2
    assert result["mean_a"] == 2.5 and result["mean_b"] == 4.0 and result["mean_diff"] == 1.5
    with pytest.raises(ValueError, match="equal lengths"):
        paired_bootstrap([1.0, 2.0], [1.0])


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
    assert better["p_bootstrap"] == 0.0
    # Four positive differences: exact two-sided Wilcoxon p = 2 / 2**4.
    assert better["wilcoxon_statistic"] == 0.0
    assert better["p_wilcoxon"] == pytest.approx(0.125)
    assert partial["n_items"] == 3 and partial["n_paired"] == 3
    assert partial["mean"] == pytest.approx(0.4) and partial["mean_baseline"] == pytest.approx(0.4)
    assert partial["mean_diff"] == 0.0
    assert partial["p_bootstrap"] == 1.0 and partial["p_wilcoxon"] == 1.0


def test_compare_systems_rejects_unknown_baseline_and_duplicates():
    table = _long_table()
    with pytest.raises(ValueError, match="baseline 'missing'"):
        compare_systems(table, "score", "system", "paper", baseline="missing")
    with pytest.raises(ValueError, match="more than one"):
        compare_systems(pd.concat([table, table.iloc[:1]]), "score", "system", "paper", "base")
