"""The inputs of the LC win rates: soft verdicts, range checks, identification relative to n,
and the v1 table's rows."""

import numpy as np
import pandas as pd
import pytest

from isqaflow.arena.ratings.length import lc_table
from isqaflow.arena.ratings.length_inputs import (
    check_preferences,
    identification,
    min_side,
    preferences,
    soft_verdict,
)
from isqaflow.arena.ratings.length_v1 import lc_table_v1


def _records(verdicts):
    n = len(verdicts)
    return pd.DataFrame(
        {
            "system_a": "m",
            "system_b": "base",
            "domain": "d",
            "qid": [str(i) for i in range(n)],
            "answer_a": ["x" * (50 + i % 7) for i in range(n)],
            "answer_b": ["y" * 53] * n,
            "verdict": verdicts,
        }
    )


def test_soft_verdicts_are_kept_on_the_labels_scale():
    """AlpacaEval-style soft verdicts in [1, 2] (1 the first system's win): 805 in, 805 out,
    system_a's preference 2 - v; the labels as before; an invalid or missing verdict left out."""
    rng = np.random.default_rng(0)
    soft = rng.uniform(1, 2, size=805)
    prefs = preferences(_records(list(soft)))
    assert len(prefs) == 805
    np.testing.assert_allclose(prefs["preference"], 2 - soft)
    mixed = preferences(_records(["1", "tie", "2", 1.25, "1.75", None, np.nan, "invalid"]))
    assert mixed["preference"].tolist() == [1.0, 0.5, 0.0, 0.75, 0.25]
    assert soft_verdict(1) == 1.0 and soft_verdict(2.0) == 0.0


@pytest.mark.parametrize("verdict", [2.5, 0.5, "3", float("inf")])
def test_a_soft_verdict_out_of_range_is_named(verdict):
    with pytest.raises(
        ValueError, match=r"record 1 \(m vs base, qid 1\), field 'verdict'.*outside \[1, 2\]"
    ):
        preferences(_records(["1", verdict]))


def _prefs(n=12, **override):
    frame = pd.DataFrame(
        {
            "system": "m",
            "baseline": "base",
            "query": [f"q{i}" for i in range(n)],
            "preference": np.linspace(0, 1, n),
            "len_system": [100 + 10 * (i % 3 - 1) for i in range(n)],
            "len_baseline": 100,
        }
    )
    for column, (row, value) in override.items():
        frame[column] = frame[column].astype(object)
        frame.loc[row, column] = value
    return frame


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"preference": (3, 1.5)}, r"row 3 \(m vs base, query q3\), field 'preference' = 1.5"),
        ({"preference": (2, np.nan)}, r"row 2 .*field 'preference'"),
        ({"len_system": (4, -1)}, r"row 4 .*field 'len_system' = -1"),
        ({"len_baseline": (5, 10.5)}, r"row 5 .*field 'len_baseline' = 10.5"),
        ({"system": (1, None)}, r"row 1, field 'system' is empty"),
    ],
)
def test_every_input_is_range_checked(override, message):
    """lc_table fed AlpacaEval's raw 1..2 preferences printed a 106.9% win rate: now each bad
    input is an error naming its row and field, in both tables."""
    bad = _prefs(**override)
    with pytest.raises(ValueError, match=message):
        check_preferences(bad)
    with pytest.raises(ValueError, match=message):
        lc_table(bad, rounds=2, seed=0)
    with pytest.raises(ValueError, match=message):
        lc_table_v1(bad, rounds=2, seed=0)


def test_a_repeated_pair_is_refused_where_the_fit_needs_one_per_query():
    """length_controlled_v1 fits one row per instruction; the run's tables may judge a query
    more than once (their bootstrap resamples a query's pairs together)."""
    repeated = _prefs(query=(6, "q5"))
    check_preferences(repeated)
    with pytest.raises(ValueError, match=r"row 6 repeats the pair \(m vs base, query q5\)"):
        check_preferences(repeated, one_per_query=True)
    with pytest.raises(ValueError, match=r"row 6 repeats the pair"):
        lc_table_v1(repeated, rounds=2, seed=0)


def test_preferences_on_alpaca_evals_scale_are_refused():
    prefs = _prefs().assign(preference=np.linspace(1, 2, 12))
    with pytest.raises(
        ValueError, match=r"field 'preference' = .*expected a system's preference in \[0, 1\]"
    ):
        lc_table(prefs, rounds=2, seed=0)


def test_identification_is_relative_to_n():
    """805 pairs, 8 longer (the issue's case): 3 on each side is no longer enough, 5% (41) is;
    below 60 pairs the absolute 3 still decides (the run-sized tables keep their rule)."""
    base = np.full(805, 500)
    for longer, expected in ((8, "not identified"), (40, "not identified"), (41, "identified")):
        system = np.r_[np.full(longer, 600), np.full(805 - longer, 400)]
        status = identification(system, base)
        assert status.startswith(expected), (longer, status)
    assert "at least 41 of each needed" in identification(np.r_[[600] * 8, [400] * 797], base)
    assert min_side(33) == 3 and min_side(60) == 3 and min_side(61) == 4 and min_side(805) == 41
    assert identification([600] * 3 + [400] * 30, [500] * 33) == "identified"


def test_v1_table_says_where_the_difficulty_comes_from():
    """Two systems, no difficulty file: each one's difficulty is estimated from the other
    (said so in the row); with a file, 'given'. Raw win rate in [0, 100]."""
    rng = np.random.default_rng(3)
    frames = []
    for system, shift in (("a", 40), ("b", -30)):
        n = 60
        frames.append(
            pd.DataFrame(
                {
                    "system": system,
                    "baseline": "base",
                    "query": [f"q{i}" for i in range(n)],
                    "preference": rng.uniform(0, 1, n).round(2),
                    "len_system": (300 + shift + rng.normal(0, 80, n)).astype(int),
                    "len_baseline": 300,
                }
            )
        )
    prefs = pd.concat(frames, ignore_index=True)
    table = lc_table_v1(prefs, rounds=3, seed=0)
    assert table["difficulty"].tolist() == ["estimated from 1 other systems"] * 2
    assert table["glm"].eq("length_controlled_noreg").all()
    assert table["win rate (ties half) %"].between(0, 100).all()
    identified = table[table["LC status"] == "identified"]
    assert len(identified) >= 1
    assert (identified["LC lower"] <= identified["LC win rate %"]).all()
    assert (identified["LC win rate %"] <= identified["LC upper"]).all()
    given = lc_table_v1(
        prefs, rounds=0, seed=0, difficulty=pd.Series(0.0, index=prefs["query"].unique())
    )
    assert given["difficulty"].eq("given").all()
