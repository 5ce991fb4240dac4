"""Length-controlled win rates (AlpacaEval 2.0's GLM) against alpaca_eval's own
implementation on the same preferences, and the judge's length bias."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from isqaflow.arena.ratings.length import (
    MIN_PAIRS,
    fit_logistic,
    lc_table,
    lc_win_rate,
    length_bias,
    length_tables,
    preferences,
    query_difficulty,
)

from isqaflow.arena.ratings.length_v1 import lc_table_v1

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "lc_alpaca_eval.json"


@pytest.fixture(scope="module")
def reference():
    return json.loads(FIXTURE.read_text())


def test_lc_win_rate_equals_alpaca_eval(reference):
    """Same preferences, same query difficulties: each system's LC win rate is alpaca_eval
    0.6.6's default fit (L1, penalty by 5-fold cross-validation;
    tests/fixtures/make_lc_reference.py) to 0.01 points -- the fit, not a penalty of ours."""
    prefs = pd.DataFrame(reference["preferences"])
    gamma = pd.Series(reference["difficulty"])
    for system, expected in reference["alpaca_eval"].items():
        mine = prefs[prefs["system"] == system].reset_index(drop=True)
        assert 100 * mine["preference"].mean() == pytest.approx(expected["win_rate"], abs=1e-9)
        lc, _ = lc_win_rate(mine, gamma)
        assert lc == pytest.approx(expected["length_controlled_winrate_cv"], abs=0.01), system
    # the systems differ: the verbose system's LC win rate falls well below its raw one
    verbose = reference["alpaca_eval"]["verbose"]
    assert verbose["length_controlled_winrate_cv"] < 45 < verbose["win_rate"]


def _one_sided(n, wins, shorter_by):
    """n pairs of a system whose answers are all shorter than the baseline's (the embedded
    run's LFRQA pairs: 33 of 33 shorter, by 108-561 characters)."""
    return pd.DataFrame(
        {
            "system": "m",
            "baseline": "ref",
            "query": [f"q{i}" for i in range(n)],
            "preference": [1.0] * wins + [0.0] * (n - wins),
            "len_system": 100,
            "len_baseline": [100 + d for d in shorter_by],
        }
    )


def test_lc_not_identified_when_the_length_difference_is_never_zero():
    """Every answer shorter: the intercept would be an extrapolation that the penalty sets
    (the issue: 35.2 / 32.0 / 100 / 47.1 by the fit chosen).  No LC win rate, no interval,
    the reason in the row."""
    prefs = _one_sided(33, 12, np.linspace(108, 561, 33).astype(int))
    row = lc_table(prefs, rounds=20, seed=0).iloc[0]
    assert row["n"] == 33 and (row["longer"], row["shorter"]) == (0, 33)
    assert row["win rate (ties half) %"] == pytest.approx(100 * 12 / 33)
    assert (
        np.isnan(row["LC win rate %"]) and np.isnan(row["LC lower"]) and np.isnan(row["LC upper"])
    )
    assert row["LC status"].startswith(
        "not identified: the system is not shorter in 0 and not longer in 33"
    )
    # two pairs on the other side are still too few; three on each side identify it
    for longer, status in ((2, "not identified"), (3, "identified")):
        shift = [-50] * longer + [200] * (33 - longer)
        row = lc_table(_one_sided(33, 12, shift), rounds=20, seed=0).iloc[0]
        assert row["LC status"].startswith(status), longer
        assert np.isnan(row["LC win rate %"]) == (status != "identified")


def test_no_interval_from_fewer_pairs_than_the_fit_can_use():
    """2-9 pairs: 5-fold cross-validation cannot choose a penalty; no LC, no interval."""
    for n in (2, 3, 9):
        row = lc_table(_one_sided(n, 1, ([-30, 40] * n)[:n]), rounds=20, seed=0).iloc[0]
        assert (
            row["LC status"]
            == f"not identified: {n} pairs, the cross-validated fit needs at least {MIN_PAIRS}"
        )
        assert np.isnan(row["LC lower"]) and np.isnan(row["LC upper"])


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
    prefs = pd.DataFrame(
        {
            "system": "m",
            "baseline": "ref",
            "query": [f"q{i}" for i in range(40)],
            "preference": [1.0] * 25 + [0.0] * 10 + [0.5] * 5,
            "len_system": 100,
            "len_baseline": 100,
        }
    )
    table = lc_table(prefs, rounds=50, seed=1)
    row = table.iloc[0]
    assert row["win rate (ties half) %"] == pytest.approx(100 * 27.5 / 40)
    assert row["LC win rate %"] == pytest.approx(row["win rate (ties half) %"], abs=0.5)
    assert row["LC lower"] <= row["LC win rate %"] <= row["LC upper"]
    assert row["n"] == 40
    # its standard error as AlpacaEval's (the sample SE of the mean preference, x100), in both fits
    expected = 100 * np.std([1.0] * 25 + [0.0] * 10 + [0.5] * 5, ddof=1) / np.sqrt(40)
    assert row["win rate SE"] == pytest.approx(expected, abs=1e-12)
    v1 = lc_table_v1(prefs, rounds=5, seed=1).iloc[0]
    assert v1["win rate SE"] == pytest.approx(expected, abs=1e-12)


def test_query_difficulty_from_all_systems():
    """A query every system loses on is harder than one every system wins on."""
    rows = []
    for s in ("a", "b", "c"):
        for q, pref in (("hard", 0.0), ("easy", 1.0), ("mid", 0.5)):
            rows.append(
                {"system": s, "query": q, "preference": pref, "len_system": 10, "len_baseline": 10}
            )
    gamma = query_difficulty(pd.DataFrame(rows))
    assert gamma["easy"] > gamma["mid"] > gamma["hard"]
    assert gamma.mean() == pytest.approx(0.0, abs=1e-9) and gamma.std(ddof=1) == pytest.approx(1.0)


def _records(verdicts, len_a, len_b):
    return pd.DataFrame(
        {
            "verdict": verdicts,
            "answer_a": ["a" * n for n in len_a],
            "answer_b": ["b" * n for n in len_b],
            "system_a": "m",
            "system_b": "ref",
            "domain": "d",
            "qid": [str(i) for i in range(len(verdicts))],
        }
    )


def test_length_bias_exact_interval():
    from scipy.stats import binomtest

    # 8 decided pairs of unequal length, the longer wins 7; a tie, an invalid and an equal-length pair don't count
    verdicts = ["1"] * 5 + ["2"] * 3 + ["tie", None, "1"]
    len_a = [50] * 5 + [10, 10, 90] + [5, 5, 20]
    len_b = [10] * 5 + [40, 40, 10] + [50, 50, 20]
    bias = length_bias(_records(verdicts, len_a, len_b))
    assert (bias["pairs"], bias["longer wins"]) == (8, 7)
    ci = binomtest(7, 8).proportion_ci(method="exact")
    assert bias["lower"] == pytest.approx(100 * ci.low) and bias["upper"] == pytest.approx(
        100 * ci.high
    )
    assert bias["p"] == pytest.approx(binomtest(7, 8).pvalue)


def test_length_tables_per_setting_and_kind():
    rng = np.random.default_rng(3)
    n = 30
    records = _records(
        list(rng.choice(["1", "2", "tie"], size=n)),
        rng.integers(10, 300, n),
        rng.integers(10, 300, n),
    )
    records["kind"] = "reference"
    records["setting"] = "bm25-k5.local"
    lc, bias = length_tables(records, rounds=20, seed=0)
    assert list(lc.index) == [("bm25-k5.local", "reference", "m", "ref")]
    assert lc.iloc[0]["n"] == n
    assert (
        bias.empty
    )  # against the reference, "the longer wins" is "the reference wins": no bias row
    prefs = preferences(records)
    assert set(prefs["preference"]) <= {0.0, 0.5, 1.0} and len(prefs) == n


def test_length_bias_only_among_pairs_of_two_model_answers():
    """The reference is the longer answer in every reference pair and wins most: that is its
    quality, not the judge's length bias, so reference pairs give no length-bias row; pairs of
    two model answers (all_pairs, head_to_head) do."""
    n = 27
    reference = _records(["2"] * 22 + ["1"] * 5, [50] * n, [400] * n).assign(
        kind="reference", setting="s"
    )
    models = _records(["1"] * 6 + ["2"] * 4, [300] * 10, [100] * 10)
    models = models.assign(kind="all_pairs", setting="s", system_b="other")
    _, bias = length_tables(pd.concat([reference, models], ignore_index=True), rounds=5, seed=0)
    assert list(bias.index) == [("s", "all_pairs")]
    assert (bias.iloc[0]["pairs"], bias.iloc[0]["longer wins"]) == (10, 6)


def test_length_bias_resamples_queries_not_pairs():
    """3 queries with 5 pairs each, the longer answer winning all 15: as independent pairs
    p = 2 / 2^15; by query (each query's pairs flip together) p = 2 / 2^3."""
    records = _records(["1"] * 15, [90] * 15, [10] * 15)
    records["qid"] = [str(i // 5) for i in range(15)]
    bias = length_bias(records)
    assert bias["p"] == pytest.approx(2 / 2**15)
    assert bias["p by query"] == pytest.approx(2 / 2**3)
    assert bias["queries"] == 3


SMALL = Path(__file__).resolve().parents[2] / "fixtures" / "lc_alpaca_eval_small.json"


def test_lc_win_rate_equals_alpaca_eval_on_run_sized_preferences():
    """30 seeded cases of 10-33 pairs (the embedded run's size), lengths on both sides:
    alpaca_eval 0.6.6's default fit (tests/fixtures/make_lc_reference_small.py), to 1e-6
    points -- including the cases where its cross-validation picks C = 1e-4 and every
    coefficient is 0 (exactly 50)."""
    cases = json.loads(SMALL.read_text())["cases"]
    assert len(cases) == 30
    for case in cases:
        prefs = pd.DataFrame(case["preferences"])
        lc, _ = lc_win_rate(prefs, pd.Series(case["difficulty"]))
        assert lc == pytest.approx(case["length_controlled_winrate_cv"], abs=1e-6)
    assert sum(c["length_controlled_winrate_cv"] == pytest.approx(50.0) for c in cases) >= 10


def test_a_fit_the_penalty_zeroes_is_not_identified():
    """12 noisy pairs, lengths on both sides: the cross-validation picks C = 1e-4, every
    coefficient is 0 and the LC win rate would be 50 whatever the preferences."""
    rng = np.random.default_rng(2)
    prefs = pd.DataFrame(
        {
            "system": "m",
            "baseline": "ref",
            "query": [f"q{i}" for i in range(12)],
            "preference": rng.choice([0.0, 0.5, 1.0], size=12),
            "len_system": rng.integers(100, 500, 12),
            "len_baseline": 300,
        }
    )
    row = lc_table(prefs, rounds=20, seed=0).iloc[0]
    assert (
        row["C"] == pytest.approx(1e-4)
        and np.isnan(row["LC win rate %"])
        and np.isnan(row["LC lower"])
    )
    assert row["LC status"].startswith(
        "not identified: the cross-validated L1 penalty (C = 0.0001) sets every"
    )


def test_a_systems_difficulty_term_comes_from_the_other_systems():
    """One pair per query: a difficulty fit over the system's own pairs would restate its
    outcomes.  Each system's difficulties come from the others' pairs; alone, it has none.
    (24 easy queries, 6 hard ones, the same for both systems.)"""
    from isqaflow.arena.ratings.length import _design, fit_lc

    rng = np.random.default_rng(5)
    rows = [
        {
            "system": s,
            "baseline": "ref",
            "query": f"q{i}",
            "preference": float(rng.random() < (0.95 if i < 24 else 0.1)),
            "len_system": int(rng.integers(100, 500)),
            "len_baseline": 300,
        }
        for s in ("a", "b")
        for i in range(30)
    ]
    prefs = pd.DataFrame(rows)
    mine = prefs[prefs["system"] == "a"].reset_index(drop=True)
    y = mine["preference"].to_numpy()
    table = lc_table(prefs, rounds=5, seed=0).set_index("system")
    assert table.loc["a", "LC status"] == "identified"
    from_b, _, _ = fit_lc(_design(mine, query_difficulty(prefs[prefs["system"] == "b"])), y)
    assert table.loc["a", "LC win rate %"] == pytest.approx(from_b)
    alone = lc_table(prefs[prefs["system"] == "a"], rounds=5, seed=0).iloc[0]
    no_difficulty, beta, _ = fit_lc(_design(mine, pd.Series(dtype=float)), y)
    assert beta[2] == 0.0 and alone["LC status"] == "identified"
    assert alone["LC win rate %"] == pytest.approx(no_difficulty)
