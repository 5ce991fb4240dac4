from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom

from isqaflow.ppi import (
    NOT_RANDOM,
    classical_mean_ci,
    ppi_lambda,
    ppi_mean,
    ppi_mean_ci,
    ppi_paired_difference,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REFERENCE = FIXTURES / "ppi_reference.json"
# the test-only venv with ppi-python (tests/fixtures/make_ppi_reference.py says how it was built)
PPI_PYTHON = Path(os.environ.get("ISQAFLOW_PPI_PYTHON", "/tmp/honest40-venv/bin/python"))


def _check_against(reference: dict) -> None:
    alpha = reference["alpha"]
    for index, case in enumerate(reference["cases"]):
        y, yhat, unlabeled = case["y"], case["yhat"], case["yhat_unlabeled"]
        estimate, low, high, lam = ppi_mean_ci(y, yhat, unlabeled, alpha=alpha)
        label = f"case {index} ({case['kind']}, n={len(y)}, N={len(unlabeled)})"
        assert lam == pytest.approx(case["lambda"], abs=1e-12), label
        assert estimate == pytest.approx(case["estimate"], abs=1e-12), label
        assert (low, high) == pytest.approx(tuple(case["ci"]), abs=1e-12), label
        _, low, high, _ = ppi_mean_ci(y, yhat, unlabeled, alpha=alpha, lam=1.0)
        assert (low, high) == pytest.approx(tuple(case["ci_plain"]), abs=1e-12), label
        _, low, high = classical_mean_ci(y, alpha=alpha)
        assert (low, high) == pytest.approx(tuple(case["ci_classical"]), abs=1e-12), label


def test_ppi_equals_ppi_python_on_the_committed_reference_cases():
    reference = json.loads(REFERENCE.read_text())
    assert len(reference["cases"]) == 40
    # the cases span the weight's range: ignored judges (0), clipped at 1 and in between
    lambdas = [case["lambda"] for case in reference["cases"]]
    assert min(lambdas) < 0.05 and max(lambdas) > 0.5
    _check_against(reference)


@pytest.mark.skipif(not PPI_PYTHON.exists(), reason=f"no ppi-python venv at {PPI_PYTHON}")
def test_ppi_equals_ppi_python_live(tmp_path):
    out = tmp_path / "reference.json"
    subprocess.run(
        [str(PPI_PYTHON), str(FIXTURES / "make_ppi_reference.py"), str(out)],
        check=True,
        timeout=300,
    )
    fresh = json.loads(out.read_text())
    assert fresh["cases"] == json.loads(REFERENCE.read_text())["cases"]
    _check_against(fresh)


def _biased_judge(rng: np.random.Generator, truth: np.ndarray, yes_when_no: float) -> np.ndarray:
    """Right on 90% of the true YES, but says YES on ``yes_when_no`` of the true NO."""
    says_yes = np.where(
        truth == 1, rng.random(truth.size) < 0.9, rng.random(truth.size) < yes_when_no
    )
    return says_yes.astype(float)


# the simulations: R seeded repetitions; the PPI interval's coverage count must lie where a
# Binomial(R, 0.95) count lies with probability 0.998 (exact quantiles), the judge-only one's far below
R, N_HUMAN, N_JUDGE, ALPHA = 600, 150, 2000, 0.05
LOW_COUNT, HIGH_COUNT = binom.ppf(0.001, R, 1 - ALPHA), binom.isf(0.001, R, 1 - ALPHA)


def test_ppi_covers_at_its_nominal_rate_where_a_biased_judge_alone_misses():
    rng = np.random.default_rng(2024)
    truth_mean = 0.4
    covered = {"judge": 0, "human": 0, "ppi": 0}
    widths = {"human": 0.0, "ppi": 0.0}
    for _ in range(R):
        truth = (rng.random(N_HUMAN + N_JUDGE) < truth_mean).astype(float)
        judged = _biased_judge(rng, truth, yes_when_no=0.3)  # judge's mean: 0.36 + 0.18 = 0.54
        est = ppi_mean(truth[:N_HUMAN], judged[:N_HUMAN], judged[N_HUMAN:], alpha=ALPHA)
        assert est.n_human == N_HUMAN and est.n_judge == N_HUMAN + N_JUDGE and est.note == ""
        for name in covered:
            low, high = getattr(est, f"{name}_low"), getattr(est, f"{name}_high")
            covered[name] += low <= truth_mean <= high
        widths["human"] += est.human_high - est.human_low
        widths["ppi"] += est.ppi_high - est.ppi_low
    assert covered["judge"] < 0.01 * R, covered
    assert LOW_COUNT <= covered["ppi"] <= HIGH_COUNT, (covered, LOW_COUNT, HIGH_COUNT)
    # the point of it: narrower than the human labels alone (the judge tracks people)
    assert widths["ppi"] < 0.9 * widths["human"], widths


def test_ppi_paired_difference_covers_where_the_judge_favours_one_system():
    rng = np.random.default_rng(7)
    mean_a, mean_b = 0.5, 0.55  # true difference 0.05
    covered = {"judge": 0, "ppi": 0}
    for _ in range(R):
        truth_a = (rng.random(N_HUMAN + N_JUDGE) < mean_a).astype(float)
        truth_b = (rng.random(N_HUMAN + N_JUDGE) < mean_b).astype(float)
        # the judge is kinder to b's wrong answers (a length bias, say): it inflates b - a
        judged_a = _biased_judge(rng, truth_a, yes_when_no=0.1)
        judged_b = _biased_judge(rng, truth_b, yes_when_no=0.35)
        est = ppi_paired_difference(
            truth_a[:N_HUMAN],
            truth_b[:N_HUMAN],
            judged_a[:N_HUMAN],
            judged_b[:N_HUMAN],
            judged_a[N_HUMAN:],
            judged_b[N_HUMAN:],
            alpha=ALPHA,
        )
        for name in covered:
            low, high = getattr(est, f"{name}_low"), getattr(est, f"{name}_high")
            covered[name] += low <= mean_b - mean_a <= high
    assert covered["judge"] < 0.01 * R, covered
    assert LOW_COUNT <= covered["ppi"] <= HIGH_COUNT, (covered, LOW_COUNT, HIGH_COUNT)


def test_ppi_lambda_ignores_an_uninformative_judge_and_trusts_a_perfect_one():
    rng = np.random.default_rng(3)
    y = (rng.random(200) < 0.5).astype(float)
    assert ppi_lambda(y, np.ones(200), np.ones(1000)) == 0.0  # one answer for everything
    # a perfect judge on many unlabelled items: lambda = 1 / (1 + n/N) before clipping
    perfect = ppi_lambda(y, y, (rng.random(4000) < y.mean()).astype(float))
    assert perfect == pytest.approx(1 / (1 + 200 / 4000), abs=0.03)
    # with lambda 0 the estimate is the human mean and its classical interval
    estimate, low, high, lam = ppi_mean_ci(y, np.ones(200), np.ones(1000))
    assert lam == 0 and (estimate, low, high) == pytest.approx(classical_mean_ci(y))


def test_a_subset_not_drawn_at_random_gets_no_ppi_estimate_and_says_why():
    y, yhat, rest = [1, 0, 1, 1], [1, 1, 1, 0], [1, 0, 0, 1, 1]
    est = ppi_mean(y, yhat, rest, random_subset=False)
    assert np.isnan(est.ppi) and np.isnan(est.ppi_low) and est.note == NOT_RANDOM
    assert est.human == 0.75 and est.judge == pytest.approx(6 / 9)
    assert est.as_row()["n_human"] == 4 and est.as_row()["n_judge"] == 9


@pytest.mark.parametrize(
    ("y", "yhat", "rest", "message"),
    [
        ([1, 0, 1], [1, 0], [1, 1, 0], "3 human labels but 2 judge labels"),
        ([1, np.nan, 1], [1, 0, 1], [1, 1, 0], "human labels holds 1 missing"),
        ([1], [1], [1, 0], "at least 2 labelled"),
    ],
)
def test_bad_inputs_are_refused_with_what_is_wrong(y, yhat, rest, message):
    with pytest.raises(ValueError, match=message):
        ppi_mean(y, yhat, rest)


def test_paired_difference_refuses_unpaired_labels():
    with pytest.raises(ValueError, match="paired human labels: 2 for a but 3 for b"):
        ppi_paired_difference([1, 0], [1, 0, 1], [1, 0], [1, 0], [1, 1], [0, 1])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
