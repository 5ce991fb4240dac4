"""AlpacaEval 2.0's leaderboard LC (``length_controlled_v1``: the GLM regularized towards the
gamed baselines) against alpaca_eval 0.6.6's own function on the same inputs."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from isqaflow.arena.ratings.length_v1 import (
    LAMBDA,
    design,
    fit_v1,
    lc_table_v1,
    predict_from_weights,
)

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "lc_v1_alpaca_eval.json"


@pytest.fixture(scope="module")
def reference():
    data = json.loads(FIXTURE.read_text())
    prefs = pd.DataFrame(data["preferences"])
    return data, prefs, pd.Series(data["difficulty"]), prefs[prefs["system"].isin(data["gamed"])]


def test_v1_equals_alpaca_eval(reference):
    """Same soft preferences, gamed rows and difficulties (tests/fixtures/make_lc_v1_reference.py):
    each system's LC win rate, chosen penalty's coefficients and raw win rate are alpaca_eval's
    to 1e-9 -- the cross-validation picks the same C (liblinear seeded as LogisticRegressionCV
    seeds it), so the refit is the same fit."""
    data, prefs, difficulty, gamed = reference
    for system, expected in data["alpaca_eval"].items():
        mine = prefs[prefs["system"] == system]
        fit = fit_v1(mine, difficulty, gamed)
        assert 100 * mine["preference"].mean() == pytest.approx(expected["win_rate"], abs=1e-9)
        assert fit.lc == pytest.approx(expected["length_controlled_winrate"], abs=1e-9), system
        w = expected["weights"]
        assert fit.theta == pytest.approx(w["not_gamed_baseline.astype(float)"], abs=1e-9)
        assert fit.psi == pytest.approx(w["instruction_difficulty"], abs=1e-9)
        # alpaca_eval's length difference is baseline minus system: our phi has the other sign
        assert fit.phi == pytest.approx(-w["np.tanh(std_delta_len)"], abs=1e-9)
    # the judge of the fixture favours length: the verbose system's LC falls below its raw win rate
    verbose = data["alpaca_eval"]["verbose"]
    assert verbose["length_controlled_winrate"] < 50 < verbose["win_rate"]


def test_gamed_rows_pull_the_length_slope_and_carry_no_intercept(reference):
    """The gamed baselines' rows: intercept column 0, weight lambda/2 each; without them the
    fit is the unregularized one, whose length slope differs."""
    data, prefs, difficulty, gamed = reference
    mine = prefs[prefs["system"] == "verbose"]
    X, _, w, n_gamed = design(mine, difficulty, gamed)
    assert n_gamed == len(gamed) and np.all(X[:n_gamed, 2] == 0) and np.all(X[n_gamed:, 2] == 1)
    assert np.all(w[:n_gamed] == LAMBDA / 2) and np.all(w[n_gamed:] == 1)
    alone = fit_v1(mine, difficulty, None)
    assert abs(alone.phi - fit_v1(mine, difficulty, gamed).phi) > 0.01


def test_a_query_without_difficulty_is_a_named_error(reference):
    data, prefs, difficulty, gamed = reference
    mine = prefs[prefs["system"] == "plain"]
    with pytest.raises(ValueError, match="no instruction difficulty.*first: 199"):
        fit_v1(mine, difficulty.drop(199), gamed)


def test_predict_from_weights_is_the_mean_sigmoid():
    assert predict_from_weights(0.0, 1.0, [-1.0, 1.0]) == pytest.approx(50.0)
    assert predict_from_weights(np.log(3), 0.0, [5.0, -2.0]) == pytest.approx(75.0)


def test_v1_table_rows_are_alpaca_evals_numbers(reference):
    """lc_table_v1 with the fixture's gamed rows and difficulties: each identified system's
    row carries alpaca_eval's LC win rate, says length_controlled_v1 and 'given'."""
    data, prefs, difficulty, gamed = reference
    systems = prefs[prefs["system"].isin(data["systems"])].assign(baseline="baseline")
    table = lc_table_v1(systems, rounds=0, seed=0, difficulty=difficulty, gamed=gamed).set_index(
        "system"
    )
    assert table["glm"].eq("length_controlled_v1").all() and table["difficulty"].eq("given").all()
    for system, expected in data["alpaca_eval"].items():
        row = table.loc[system]
        if row["LC status"] == "identified":
            assert row["LC win rate %"] == pytest.approx(
                expected["length_controlled_winrate"], abs=1e-9
            )
        else:
            assert np.isnan(row["LC win rate %"])
    assert (table["LC status"] == "identified").sum() >= 2
