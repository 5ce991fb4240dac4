"""Length-controlled win rates (AlpacaEval 2.0's GLM) against alpaca_eval's own
implementation on the same preferences, and the judge's length bias."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from isqaflow.arena.length import (
    fit_logistic,
    lc_table,
    lc_win_rate,
    length_bias,
    length_tables,
    preferences,
    query_difficulty,
)

FIXTURE = Path(__file__).parent / "fixtures" / "lc_alpaca_eval.json"


@pytest.fixture(scope="module")
def reference():
    return json.loads(FIXTURE.read_text())


def test_lc_win_rate_equals_alpaca_eval(reference):
    """Same preferences, same query difficulties: each system's LC win rate is alpaca_eval
    0.6.6's (tests/fixtures/make_lc_reference.py).  Against its nearly unpenalized fit
    (n_splits 0: L1 at C=100) to 0.05 points; against its default fit (L1 with the penalty
    chosen by cross-validation, which shrinks small coefficients to zero) to 1.5 points."""
    prefs = pd.DataFrame(reference["preferences"])
    gamma = pd.Series(reference["difficulty"])
    for system, expected in reference["alpaca_eval"].items():
        mine = prefs[prefs["system"] == system].reset_index(drop=True)
        assert 100 * mine["preference"].mean() == pytest.approx(expected["win_rate"], abs=1e-9)
        lc, beta = lc_win_rate(mine, gamma)
        assert lc == pytest.approx(expected["length_controlled_winrate_c100"], abs=0.05), system
        assert lc == pytest.approx(expected["length_controlled_winrate_cv"], abs=1.5), system
    # the systems differ: the verbose system's LC win rate falls well below its raw one
    verbose = reference["alpaca_eval"]["verbose"]
    assert verbose["length_controlled_winrate_cv"] < 45 < verbose["win_rate"]


def test_logistic_fit_is_the_maximum_likelihood():
    rng = np.random.default_rng(0)
    X = np.column_stack([np.ones(2000), rng.normal(size=2000)])
    y = (rng.random(2000) < 1 / (1 + np.exp(-(0.5 + 1.2 * X[:, 1])))).astype(float)
    beta = fit_logistic(X, y, penalty=0.0)
    p = 1 / (1 + np.exp(-X @ beta))
    np.testing.assert_allclose(X.T @ (p - y), 0.0, atol=1e-8)  # the score equations
    assert beta == pytest.approx([0.5, 1.2], abs=0.15)


def test_no_length_effect_leaves_the_win_rate():
    """Equal lengths everywhere: the length term is zero and the LC win rate is the model's
    mean prediction, which a logistic fit with an intercept makes the raw win rate."""
    prefs = pd.DataFrame({"system": "m", "baseline": "ref", "query": [f"q{i}" for i in range(40)],
                          "preference": [1.0] * 25 + [0.0] * 10 + [0.5] * 5, "len_system": 100,
                          "len_baseline": 100})
    table = lc_table(prefs, rounds=50, seed=1)
    row = table.iloc[0]
    assert row["win rate (ties half) %"] == pytest.approx(100 * 27.5 / 40)
    assert row["LC win rate %"] == pytest.approx(row["win rate (ties half) %"], abs=0.5)
    assert row["LC lower"] <= row["LC win rate %"] <= row["LC upper"]
    assert row["n"] == 40


def test_query_difficulty_from_all_systems():
    """A query every system loses on is harder than one every system wins on."""
    rows = []
    for s in ("a", "b", "c"):
        for q, pref in (("hard", 0.0), ("easy", 1.0), ("mid", 0.5)):
            rows.append({"system": s, "query": q, "preference": pref, "len_system": 10, "len_baseline": 10})
    gamma = query_difficulty(pd.DataFrame(rows))
    assert gamma["easy"] > gamma["mid"] > gamma["hard"]
    assert gamma.mean() == pytest.approx(0.0, abs=1e-9) and gamma.std(ddof=1) == pytest.approx(1.0)


def _records(verdicts, len_a, len_b):
    return pd.DataFrame({"verdict": verdicts, "answer_a": ["a" * n for n in len_a],
                         "answer_b": ["b" * n for n in len_b], "system_a": "m", "system_b": "ref",
                         "domain": "d", "qid": [str(i) for i in range(len(verdicts))]})


def test_length_bias_exact_interval():
    from scipy.stats import binomtest

    # 8 decided pairs of unequal length, the longer wins 7; a tie, an invalid and an equal-length pair don't count
    verdicts = ["1"] * 5 + ["2"] * 3 + ["tie", None, "1"]
    len_a = [50] * 5 + [10, 10, 90] + [5, 5, 20]
    len_b = [10] * 5 + [40, 40, 10] + [50, 50, 20]
    bias = length_bias(_records(verdicts, len_a, len_b))
    assert (bias["pairs"], bias["longer wins"]) == (8, 7)
    ci = binomtest(7, 8).proportion_ci(method="exact")
    assert bias["lower"] == pytest.approx(100 * ci.low) and bias["upper"] == pytest.approx(100 * ci.high)
    assert bias["p"] == pytest.approx(binomtest(7, 8).pvalue)


def test_length_tables_per_setting_and_kind():
    rng = np.random.default_rng(3)
    n = 30
    records = _records(list(rng.choice(["1", "2", "tie"], size=n)), rng.integers(10, 300, n), rng.integers(10, 300, n))
    records["kind"] = "reference"
    records["setting"] = "bm25-k5.local"
    lc, bias = length_tables(records, rounds=20, seed=0)
    assert list(lc.index) == [("bm25-k5.local", "reference", "m", "ref")]
    assert lc.iloc[0]["n"] == n
    assert bias.loc[("bm25-k5.local", "reference"), "pairs"] <= n
    prefs = preferences(records)
    assert set(prefs["preference"]) <= {0.0, 0.5, 1.0} and len(prefs) == n
