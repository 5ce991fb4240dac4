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


def test_on_alpaca_eval_a_pair_without_a_significant_difference_differs_by_less_than_its_mde(
    shared_data,
):
    """AlpacaEval 2.0's released annotations (805 instructions, each model against the same
    baseline, soft preferences in [0, 1]): two models paired per instruction.  Where the sign-flip
    test finds no difference at 5%, the observed difference lies below the pair's MDE -- "no
    significant difference" reads "no difference larger than the MDE"."""
    import json

    from isqaflow.stats import sign_flip_test

    folder = shared_data / "peers" / "alpaca_eval" / "annotations"
    if not folder.is_dir():
        pytest.skip(f"no AlpacaEval annotations at {folder}")

    def preferences(model: str) -> dict[str, float]:
        rows = json.loads((folder / f"{model}.json").read_text())
        return {
            r["instruction"]: r["preference"] - 1 for r in rows if r.get("preference") is not None
        }

    seen = 0
    for a, b in [
        ("Qwen-14B-Chat", "vicuna-13b-v1.5"),
        ("vicuna-13b-v1.5", "gemma-7b-it"),
        ("gpt-3.5-turbo-1106", "claude-2.1"),
    ]:
        pa, pb = preferences(a), preferences(b)
        items = sorted(set(pa) & set(pb))
        x, y = np.array([pa[i] for i in items]), np.array([pb[i] for i in items])
        assert len(items) == 805
        p = sign_flip_test(x, y, rounds=4000, seed=0)["p_value"]
        if p >= 0.05:
            seen += 1
            assert abs(np.mean(y - x)) < paired_mde(x, y), (a, b)
        else:  # measured: GPT-3.5-turbo-1106 vs Claude 2.1, 6.6 points apart, MDE 3.2
            assert abs(np.mean(y - x)) > paired_mde(x, y), (a, b)
    assert seen == 2  # measured: Qwen-14B vs Vicuna-13B (p = 0.30), Vicuna vs Gemma-7B (p = 0.81)
