"""Tests for arena ratings: Elo, Bradley–Terry, bootstraps, intervals, verdicts and win rates."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import root

from isqaflow.arena.ratings.bradley_terry import PSEUDO_COUNT, bradley_terry
from isqaflow.arena.ratings.elo import online_elo
from isqaflow.arena.ratings.bootstrap import (
    battles_from_verdicts,
    bootstrap_cell_counts,
    bootstrap_ratings,
    elo_with_intervals,
    rating_intervals,
    win_rates,
)


def make_battles(*rows: tuple[str, str, str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["model_a", "model_b", "winner"])


def random_battles(n_battles: int, models: list[str], seed: int) -> pd.DataFrame:
    """Random battles with a skill gradient and ties, so every model wins and loses."""
    rng = np.random.default_rng(seed)
    index_a = rng.integers(0, len(models), n_battles)
    index_b = (index_a + rng.integers(1, len(models), n_battles)) % len(models)
    p_a = 1.0 / (1.0 + 10.0 ** ((index_b - index_a) * 60.0 / 400.0))
    draw = rng.random(n_battles)
    winner = np.where(draw < 0.8 * p_a, "model_a", np.where(draw < 0.8, "model_b", "tie"))
    names = np.array(models, dtype=object)
    return pd.DataFrame({"model_a": names[index_a], "model_b": names[index_b], "winner": winner})


def expected_score(rating_a: float, rating_b: float) -> float:
    return 1.0 / (1.0 + 10.0 ** ((rating_b - rating_a) / 400.0))


def test_online_elo_single_win_moves_k_over_two():
    ratings = online_elo(make_battles(("A", "B", "model_a")))
    assert ratings["A"] == pytest.approx(1002.0)
    assert ratings["B"] == pytest.approx(998.0)


def test_online_elo_three_battles_by_hand():
    battles = make_battles(("A", "B", "model_a"), ("B", "C", "tie"), ("A", "C", "model_b"))
    a, b, c = 1002.0, 998.0, 1000.0  # after A beats B
    change = 4.0 * (0.5 - expected_score(b, c))  # B ties C
    b, c = b + change, c - change
    change = 4.0 * (0.0 - expected_score(a, c))  # C beats A
    a, c = a + change, c - change

    ratings = online_elo(battles)

    assert ratings.to_dict() == pytest.approx({"A": a, "B": b, "C": c}, abs=1e-9)
    assert list(ratings.index) == sorted(
        ["A", "B", "C"], key=lambda m: -{"A": a, "B": b, "C": c}[m]
    )


def test_online_elo_follows_row_order_and_parameters():
    battles = make_battles(("A", "B", "model_a"), ("A", "B", "model_b"))
    ratings = online_elo(battles, k=32.0, initial=1500.0)
    a = 1500.0 + 16.0
    loss = 32.0 * (0.0 - expected_score(a, 1484.0))
    assert ratings["A"] == pytest.approx(a + loss)
    assert ratings["B"] == pytest.approx(1484.0 - loss)
    assert ratings["A"] < ratings["B"]  # the later loss outweighs the earlier win


def test_bradley_terry_three_of_four_gives_strength_ratio_three():
    battles = make_battles(*[("A", "B", "model_a")] * 3, ("A", "B", "model_b"))
    ratings = bradley_terry(battles)
    difference = ratings["A"] - ratings["B"]
    # Two models: the MLE with pseudo-counts is the ratio of regularised wins exactly.
    assert difference == pytest.approx(400 * np.log10((3 + PSEUDO_COUNT) / (1 + PSEUDO_COUNT)))
    assert difference == pytest.approx(400 * np.log10(3), abs=0.2)  # 190.85
    assert ratings.mean() == pytest.approx(1000.0)


def test_bradley_terry_ties_count_as_half_wins():
    with_ties = make_battles(("A", "B", "model_a"), ("B", "A", "tie"), ("A", "B", "tie"))
    counted = make_battles(("A", "B", "model_a"), ("A", "B", "model_a"), ("B", "A", "model_a"))
    tied = bradley_terry(with_ties)
    assert tied.to_dict() == pytest.approx(bradley_terry(counted).to_dict(), abs=1e-9)
    assert tied["A"] - tied["B"] == pytest.approx(
        400 * np.log10((2 + PSEUDO_COUNT) / (1 + PSEUDO_COUNT))
    )


def test_bradley_terry_consistent_three_player_case():
    # Strengths 4 : 2 : 1 reproduce every observed win share exactly.
    battles = make_battles(
        *[("A", "B", "model_a")] * 2,
        ("A", "B", "model_b"),
        *[("B", "C", "model_a")] * 2,
        ("B", "C", "model_b"),
        *[("A", "C", "model_a")] * 4,
        ("A", "C", "model_b"),
    )
    ratings = bradley_terry(battles)
    step = 400 * np.log10(2)  # 120.41
    assert ratings.to_dict() == pytest.approx(
        {"A": 1000 + step, "B": 1000.0, "C": 1000 - step}, abs=0.1
    )
    anchored = bradley_terry(battles, anchor="C")
    assert anchored["C"] == 1000.0
    assert anchored["A"] - anchored["C"] == pytest.approx(ratings["A"] - ratings["C"], abs=1e-9)


def test_bradley_terry_never_winning_model_is_finite_and_deterministic():
    battles = make_battles(*[("A", "B", "model_a")] * 5)
    ratings = bradley_terry(battles)
    assert np.isfinite(ratings).all()
    assert ratings["A"] - ratings["B"] == pytest.approx(
        400 * np.log10((5 + PSEUDO_COUNT) / PSEUDO_COUNT)
    )
    pd.testing.assert_series_equal(ratings, bradley_terry(battles))


def test_bradley_terry_perfectly_ordered_battles_stay_finite():
    # Every battle is won by the stronger model: no rating difference has a finite MLE.
    models = ["m0", "m1", "m2", "m3"]
    rows = [(models[i], models[j], "model_b") for i in range(4) for j in range(i + 1, 4)] * 25
    battles = make_battles(*rows)
    ratings = bradley_terry(battles)
    assert list(ratings.index) == ["m3", "m2", "m1", "m0"]
    assert ratings.mean() == pytest.approx(1000.0)
    assert (np.diff(ratings.to_numpy()) < -1000.0).all()
    boot = bootstrap_ratings(battles, method="bt", rounds=200, seed=0)
    assert np.isfinite(boot.to_numpy()).all()
    assert (np.diff(boot[["m3", "m2", "m1", "m0"]].to_numpy(), axis=1) < 0).all()


def test_bradley_terry_symmetric_in_names_sides_and_order():
    models = ["m1", "m2", "m3", "m4", "m5"]
    battles = random_battles(400, models, seed=1)
    ratings = bradley_terry(battles)

    renaming = {"m1": "zeta", "m2": "alpha", "m3": "kappa", "m4": "beta", "m5": "omega"}
    renamed = battles.assign(
        model_a=battles["model_a"].map(renaming), model_b=battles["model_b"].map(renaming)
    )
    renamed_ratings = bradley_terry(renamed).rename(index={v: k for k, v in renaming.items()})
    pd.testing.assert_series_equal(renamed_ratings[models], ratings[models], atol=1e-9)

    mirror = {"model_a": "model_b", "model_b": "model_a", "tie": "tie"}
    swapped = pd.DataFrame(
        {
            "model_a": battles["model_b"],
            "model_b": battles["model_a"],
            "winner": battles["winner"].map(mirror),
        }
    )
    pd.testing.assert_series_equal(bradley_terry(swapped)[models], ratings[models], atol=1e-9)

    shuffled = battles.sample(frac=1.0, random_state=3)
    pd.testing.assert_series_equal(bradley_terry(shuffled)[models], ratings[models], atol=1e-9)


def test_invalid_battles_are_rejected():
    with pytest.raises(ValueError, match="winner"):
        bradley_terry(make_battles(("A", "B", "model_c")))
    with pytest.raises(ValueError, match="itself"):
        online_elo(make_battles(("A", "A", "tie")))


@pytest.mark.parametrize("method", ["bt", "elo"])
def test_bootstrap_is_determined_by_seed(method):
    battles = random_battles(200, ["m1", "m2", "m3", "m4"], seed=2)
    first = bootstrap_ratings(battles, method=method, rounds=50, seed=7)
    again = bootstrap_ratings(battles, method=method, rounds=50, seed=7)
    other = bootstrap_ratings(battles, method=method, rounds=50, seed=8)
    pd.testing.assert_frame_equal(first, again)
    assert first.shape == (50, 4)
    assert list(first.columns) == ["m1", "m2", "m3", "m4"]
    assert not np.allclose(first.to_numpy(), other.to_numpy())
    # Rounds differ from one another, and each round's ratings average to 1000.
    assert first.std().min() > 0.0
    np.testing.assert_allclose(first.mean(axis=1), 1000.0)


def test_bootstrap_of_identical_battles_repeats_the_point_fit():
    battles = make_battles(*[("A", "B", "model_a")] * 3)
    elo = bootstrap_ratings(battles, method="elo", rounds=4, seed=0, k=8.0)
    point_elo = online_elo(battles, k=8.0)
    np.testing.assert_allclose(elo[["A", "B"]], np.tile(point_elo[["A", "B"]], (4, 1)))
    bt = bootstrap_ratings(battles, method="bt", rounds=4, seed=0, anchor="B")
    np.testing.assert_allclose(bt[["A", "B"]], np.tile(bradley_terry(battles, anchor="B"), (4, 1)))


def per_battle_bt_fit(battles: pd.DataFrame, models: list[str]) -> np.ndarray:
    """Straightforward BT ratings: the root of the per-battle score equations (same pseudo-counts).

    The MLE zeroes the gradient of the log-likelihood; with the first log strength fixed
    at 0 the remaining equations have a unique root, which scipy.optimize.root finds to
    far better precision than a minimiser comparing nearly equal likelihoods.
    """
    index_a = pd.Index(models).get_indexer(battles["model_a"])
    index_b = pd.Index(models).get_indexer(battles["model_b"])
    score_a = battles["winner"].map({"model_a": 1.0, "model_b": 0.0, "tie": 0.5}).to_numpy()
    pair_i, pair_j = np.where(~np.eye(len(models), dtype=bool))

    def score(free: np.ndarray) -> np.ndarray:
        theta = np.concatenate([[0.0], free])
        surprise = score_a - 1.0 / (1.0 + np.exp(theta[index_b] - theta[index_a]))
        prior_surprise = PSEUDO_COUNT / (1.0 + np.exp(theta[pair_i] - theta[pair_j]))
        gradient = np.zeros(len(models))
        np.add.at(gradient, index_a, surprise)
        np.add.at(gradient, index_b, -surprise)
        np.add.at(gradient, pair_i, prior_surprise)
        np.add.at(gradient, pair_j, -prior_surprise)
        return gradient[1:]

    result = root(score, np.zeros(len(models) - 1), method="hybr", options={"xtol": 1e-12})
    assert result.success, result.message
    ratings = np.concatenate([[0.0], result.x]) * 400.0 / np.log(10.0)
    return ratings - ratings.mean() + 1000.0


def test_vectorised_bt_bootstrap_matches_per_round_scipy_fits():
    models = ["m1", "m2", "m3", "m4"]
    battles = random_battles(60, models, seed=4)
    boot = bootstrap_ratings(battles, method="bt", rounds=6, seed=11)
    cells, counts = bootstrap_cell_counts(battles, rounds=6, seed=11)
    assert counts.sum(axis=1).tolist() == [60] * 6
    for round_index in range(6):
        resampled = cells.loc[cells.index.repeat(counts[round_index])]
        expected = per_battle_bt_fit(resampled, models)
        np.testing.assert_allclose(boot.loc[round_index, models], expected, rtol=0, atol=1e-6)


def test_rating_intervals_rank_by_interval_separation():
    grid = np.linspace(0.0, 1.0, 401)  # evenly spaced: percentiles interpolate exactly
    bounds = {"A": (1080.0, 1120.0), "B": (1070.0, 1110.0), "C": (850.0, 880.0), "D": (890, 1080)}
    boot = pd.DataFrame({m: low + grid * (high - low) for m, (low, high) in bounds.items()})
    point = pd.Series({"C": 865.0, "A": 1100.0, "D": 985.0, "B": 1090.0})

    table = rating_intervals(point, boot, alpha=0.05)

    assert list(table.index) == ["A", "B", "D", "C"]
    assert list(table.columns) == ["rating", "lower", "upper", "rank"]
    assert table.loc["A", "lower"] == pytest.approx(1080.0 + 0.025 * 40.0)
    assert table.loc["A", "upper"] == pytest.approx(1080.0 + 0.975 * 40.0)
    assert table.loc["C", "rating"] == 865.0
    # Intervals: A [1081, 1119], B [1071, 1109], D [894.75, 1075.25], C [850.75, 879.25].
    # A and B overlap; D's upper lies below A's lower only; C's below all three lowers.
    assert table["rank"].to_dict() == {"A": 1, "B": 1, "D": 2, "C": 4}


def order_dependent_battles() -> pd.DataFrame:
    """A beats B 60 times, then B beats A 60 times: a draw overall, not in row order."""
    return make_battles(*[("A", "B", "model_a")] * 60, *[("A", "B", "model_b")] * 60)


def test_online_elo_in_row_order_can_fall_outside_its_bootstrap_interval():
    battles = order_dependent_battles()
    online = online_elo(battles)
    assert online["B"] - online["A"] == pytest.approx(85.27, abs=0.01)
    interval = rating_intervals(online, bootstrap_ratings(battles, "elo", rounds=500, seed=0))
    assert (interval["rating"] > interval["upper"]).any()  # why the point is the median


def test_elo_point_is_the_bootstrap_median_and_inside_its_interval():
    battles = order_dependent_battles()
    table = elo_with_intervals(battles, rounds=500, seed=0)
    boot = bootstrap_ratings(battles, "elo", rounds=500, seed=0)
    assert table["rating"].to_dict() == pytest.approx(boot.median().to_dict(), abs=1e-9)
    assert ((table["lower"] <= table["rating"]) & (table["rating"] <= table["upper"])).all()
    assert table["rating"].to_dict() == pytest.approx({"A": 1000.0, "B": 1000.0}, abs=5.0)
    assert table.equals(elo_with_intervals(battles, rounds=500, seed=0))
    for seed in range(5):  # on random battles too
        random_table = elo_with_intervals(
            random_battles(80, ["A", "B", "C", "D"], seed), rounds=200, seed=seed
        )
        assert (
            (random_table["lower"] <= random_table["rating"])
            & (random_table["rating"] <= random_table["upper"])
        ).all()


def test_ratings_table_reports_the_elo_bootstrap_median():
    from isqaflow.arena.tables import ratings_table

    battles = order_dependent_battles()
    judged = pd.DataFrame(
        {
            "kind": "reference",
            "system_a": battles["model_a"],
            "system_b": battles["model_b"],
            "verdict": battles["winner"].map({"model_a": "1", "model_b": "2"}),
        }
    )
    elo = {"k": 4, "base": 10, "scale": 400, "initial": 1000}
    table, _ = ratings_table(judged, elo, rounds=300, seed=1, kinds=["reference"])
    boot = bootstrap_ratings(battles, "elo", rounds=300, seed=1, **elo)
    assert table[("Elo", "rating")].to_dict() == pytest.approx(boot.median().to_dict(), abs=1e-9)
    assert (
        (table[("Elo", "lower")] <= table[("Elo", "rating")])
        & (table[("Elo", "rating")] <= table[("Elo", "upper")])
    ).all()


def test_battles_from_verdicts_drops_and_counts_invalid():
    judged = pd.DataFrame(
        {
            "system_1": ["x", "y", "x", "z", "y", "z"],
            "system_2": ["y", "z", "z", "x", "x", "y"],
            "verdict": ["1", "2", None, "tie", np.nan, " TIE "],
        },
        index=[10, 11, 12, 13, 14, 15],
    )
    battles, n_invalid = battles_from_verdicts(judged)
    assert n_invalid == 2
    assert battles.index.tolist() == [10, 11, 13, 15]
    assert battles.to_dict("list") == {
        "model_a": ["x", "y", "z", "z"],
        "model_b": ["y", "z", "x", "y"],
        "winner": ["model_a", "model_b", "tie", "tie"],
    }
    with pytest.raises(ValueError, match="verdict"):
        battles_from_verdicts(judged.assign(verdict="3"))


def test_win_rates_exclude_invalid_from_denominators():
    outcomes = pd.DataFrame(
        {
            "model": ["m1"] * 6 + ["m2"] * 3,
            "domain": ["bio", "bio", "bio", "law", "law", "law", "bio", "bio", "law"],
            "outcome": ["win", "tie", "invalid", "loss", "win", "win", "invalid", "invalid", "tie"],
        }
    )

    pooled = win_rates(outcomes).set_index("model")
    counted = ["n_win", "n_tie", "n_loss", "n_invalid", "n_valid"]
    assert pooled.loc["m1", counted].tolist() == [3, 1, 1, 1, 5]
    assert pooled.loc["m1", "win_rate"] == pytest.approx(3 / 5)
    assert pooled.loc["m1", "win_tie_rate"] == pytest.approx(4 / 5)
    assert pooled.loc["m2", "n_valid"] == 1
    assert pooled.loc["m2", "win_tie_rate"] == 1.0

    by_domain = win_rates(outcomes, by=["domain"]).set_index(["domain", "model"])
    assert by_domain.loc[("bio", "m1"), "win_rate"] == pytest.approx(1 / 2)
    assert by_domain.loc[("law", "m1"), "win_rate"] == pytest.approx(2 / 3)
    assert by_domain.loc[("bio", "m2"), "n_valid"] == 0
    assert np.isnan(by_domain.loc[("bio", "m2"), "win_rate"])
    assert by_domain.loc[("overall", "m1"), "win_rate"] == pytest.approx(3 / 5)
    assert by_domain.loc[("overall", "m2"), "n_invalid"] == 2
    assert len(by_domain) == 6  # 4 (domain, model) rows + 2 pooled rows


def test_failed_judgments_rule_ours_excludes_ragqa_arenas_counts_a_tie():
    """Issue 36 item 6: 3 wins, 2 ties, 3 losses, 2 failures -- 37.5/62.5% when a failure is
    left out (the paper's rule), 30/70% when it is a tie (RAG-QA Arena's code)."""
    import yaml

    from isqaflow.arena.ratings.bootstrap import FAILED_JUDGMENT_RULES
    from isqaflow.arena.tables import ArenaTablesSettings

    outcomes = pd.DataFrame(
        {"model": "m", "outcome": ["win"] * 3 + ["tie"] * 2 + ["loss"] * 3 + ["invalid"] * 2}
    )
    ours = win_rates(outcomes).iloc[0]
    theirs = win_rates(outcomes, failed="tie").iloc[0]
    assert (100 * ours["win_rate"], 100 * ours["win_tie_rate"]) == pytest.approx((37.5, 62.5))
    assert (100 * theirs["win_rate"], 100 * theirs["win_tie_rate"]) == pytest.approx((30, 70))
    # the counts stay what was judged: a failure is never written into n_tie
    counted = ["n_win", "n_tie", "n_loss", "n_invalid", "n_valid"]
    assert theirs[counted].tolist() == ours[counted].tolist() == [3, 2, 3, 2, 8]
    with pytest.raises(ValueError, match="failed must be one of"):
        win_rates(outcomes, failed="loss")
    from conftest import REPO

    schema = yaml.safe_load((REPO / "config/schema.yaml").read_text())
    option = schema["properties"]["arena"]["properties"]["failed_judgments"]
    assert tuple(option["enum"]) == FAILED_JUDGMENT_RULES
    assert option["default"] == "exclude" == ArenaTablesSettings.failed_judgments


def test_bradley_terry_stays_finite_and_separation_is_flagged():
    """C loses every battle: no finite MLE; the pseudo-count keeps every fit finite and the rows say so."""
    from isqaflow.arena.ratings.bootstrap import bootstrap_ratings, bt_separation

    rows = [("A", "B", "model_a"), ("B", "A", "model_a"), ("A", "B", "tie")] + [
        ("A", "C", "model_a")
    ] * 3
    rows += [("C", "B", "model_b")] * 2
    battles = pd.DataFrame(rows, columns=["model_a", "model_b", "winner"])
    boot = bootstrap_ratings(battles, "bt", rounds=300, seed=4)
    assert np.isfinite(boot.to_numpy()).all()
    flags = bt_separation(battles, rounds=300, seed=4)
    assert flags["separated"].to_dict() == {"A": False, "B": False, "C": True}
    assert flags.loc["C", "separated_share"] == 1.0  # every resample keeps C without a win
    assert 0.0 < flags.loc["A", "separated_share"] < 1.0  # resamples without A's loss to B
    # A never loses: separated in the battles and in every resample (a model not drawn is not flagged)
    unbeaten = bt_separation(battles.iloc[[0, 3, 4, 5]], rounds=10, seed=0)
    assert unbeaten.loc["A", "separated"] and unbeaten.loc["A", "separated_share"] == 1.0
    assert np.isfinite(
        bootstrap_ratings(battles.iloc[[0, 3, 4, 5]], "bt", rounds=10, seed=0).to_numpy()
    ).all()


def test_separation_through_centring_is_flagged_for_every_player():
    """C loses to A every time and beats B once in 8: in the resamples that miss that one win,
    C is separated, its rating goes to the prior, and the centring on the mean lifts A and B by
    hundreds of points although neither is itself separated (issue 30: their flag said 0%)."""
    from isqaflow.arena.ratings.bootstrap import bt_separation

    rows = [("A", "B", "model_a"), ("B", "A", "model_a")] * 4 + [("A", "C", "model_a")] * 4
    rows += [("B", "C", "model_a")] * 7 + [("B", "C", "model_b")]
    battles = make_battles(*rows)
    flags = bt_separation(battles, rounds=400, seed=2)
    boot = bootstrap_ratings(battles, "bt", rounds=400, seed=2)
    assert (
        flags["prior_share"] == flags["prior_share"].iloc[0]
    ).all()  # every player: the same rounds
    assert (flags["prior_share"] >= flags["separated_share"]).all()
    assert flags.loc["C", "separated_share"] > 0.025
    for player in ("A", "B"):  # hardly ever separated itself, yet its bound is set by the prior
        assert flags.loc[player, "separated_share"] < 0.025 < flags.loc[player, "prior_share"]
    # those rounds are the ones where A sits hundreds of points above its usual place
    assert (boot["A"] > boot["A"].median() + 200).mean() == pytest.approx(
        flags.loc["A", "prior_share"], abs=0.02
    )


def test_group_separation_is_flagged():
    """A and B always beat C and D (each group wins and loses inside): nobody alone is separated,
    but no finite maximum-likelihood fit exists in any resample."""
    from isqaflow.arena.ratings.bootstrap import bt_separation

    rows = [
        ("A", "B", "model_a"),
        ("A", "B", "model_b"),
        ("C", "D", "model_a"),
        ("C", "D", "model_b"),
    ] * 3
    rows += [
        ("A", "C", "model_a"),
        ("B", "D", "model_a"),
        ("D", "A", "model_b"),
        ("C", "B", "model_b"),
    ] * 3
    flags = bt_separation(make_battles(*rows), rounds=50, seed=0)
    assert flags["separated"].sum() == 0 and (flags["separated_share"] < 0.1).all()
    assert (flags["prior_share"] == 1.0).all()


def query_battles() -> tuple[pd.DataFrame, np.ndarray]:
    """6 queries, 4 battles each, one outcome per query (A wins all of q0-q3, B all of q4-q5)."""
    rows, queries = [], []
    for q in range(6):
        rows += [("A", "B", "model_a" if q < 4 else "model_b")] * 4
        queries += [f"d:q{q}"] * 4
    return make_battles(*rows), np.array(queries)


def test_bootstrap_by_query_resamples_whole_queries():
    battles, queries = query_battles()
    _, by_query = bootstrap_cell_counts(battles, rounds=200, seed=0, groups=queries)
    _, by_battle = bootstrap_cell_counts(battles, rounds=200, seed=0)
    assert (by_query % 4 == 0).all() and (by_query.sum(axis=1) == 24).all()
    assert not (by_battle % 4 == 0).all()
    wide = bootstrap_ratings(battles, "bt", rounds=400, seed=0, groups=queries)
    narrow = bootstrap_ratings(battles, "bt", rounds=400, seed=0)
    assert wide["A"].quantile(0.975) - wide["A"].quantile(0.025) > 1.5 * (
        narrow["A"].quantile(0.975) - narrow["A"].quantile(0.025)
    )
    # Elo by query: the same queries drawn (padding changes nothing), every round finite
    elo = bootstrap_ratings(battles, "elo", rounds=50, seed=0, groups=queries)
    assert np.isfinite(elo.to_numpy()).all() and np.allclose(elo.mean(axis=1), 1000.0)
    one_query = bootstrap_ratings(battles.iloc[:4], "elo", rounds=3, seed=0, groups=queries[:4])
    np.testing.assert_allclose(
        one_query[["A", "B"]], np.tile(online_elo(battles.iloc[:4])[["A", "B"]], (3, 1))
    )


def _judged(battles: pd.DataFrame, queries: np.ndarray | None = None) -> pd.DataFrame:
    judged = pd.DataFrame(
        {
            "kind": "reference",
            "system_a": battles["model_a"],
            "system_b": battles["model_b"],
            "verdict": battles["winner"].map({"model_a": "1", "model_b": "2", "tie": "tie"}),
        }
    )
    if queries is not None:
        judged["domain"], judged["qid"] = (
            [q.split(":")[0] for q in queries],
            [q.split(":")[1] for q in queries],
        )
    return judged


def test_ratings_table_resamples_queries_and_ranks_elo_only_when_converged():
    """35 battles, K = 4: online Elo's spread is a fraction of Bradley-Terry's (issue 30: 6.5x
    narrower), so it gets no rank; on 6000 battles it has converged and is ranked."""
    from isqaflow.arena.tables import ratings_table

    elo = {"k": 4, "base": 10, "scale": 400, "initial": 1000}
    few = random_battles(35, ["m1", "m2", "m3", "m4"], seed=5)
    table, plotted = ratings_table(_judged(few), elo, rounds=200, seed=0, kinds=["reference"])
    assert table[("Elo", "spread / BT")].iloc[0] < 0.8 and list(plotted) == [
        "Bradley-Terry"
    ]  # no Elo panel
    assert table[("Elo", "rank")].isna().all() and table[("Bradley-Terry", "rank")].notna().all()
    assert (
        list(table.columns.get_level_values(0)[:4]) == ["Bradley-Terry"] * 4
    )  # the headline first
    tiny, _ = ratings_table(
        _judged(random_battles(6, ["m1", "m2", "m3"], seed=1)),
        elo,
        rounds=50,
        seed=0,
        kinds=["reference"],
    )
    assert tiny[("votes < 10", "")].all() and not table[("votes < 10", "")].any()
    many = random_battles(6000, ["m1", "m2", "m3"], seed=6)
    table, plotted = ratings_table(_judged(many), elo, rounds=20, seed=0, kinds=["reference"])
    assert set(plotted) == {"Bradley-Terry", "Elo"}
    assert (
        0.8 <= table[("Elo", "spread / BT")].iloc[0] <= 1.25
        and table[("Elo", "rank")].notna().all()
    )
    battles, queries = query_battles()
    table, _ = ratings_table(_judged(battles, queries), elo, rounds=50, seed=0, kinds=["reference"])
    assert set(table[("resampled", "")]) == {"queries"}
