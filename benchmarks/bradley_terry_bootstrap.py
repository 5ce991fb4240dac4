"""Time the vectorised Bradley–Terry bootstrap against straightforward per-round fits.

Run from the repository root:

    .venv/bin/python benchmarks/bradley_terry_bootstrap.py [--battles 30000] [--players 12]
        [--rounds 1000] [--seed 0] [--compare-rounds 20]

Synthetic battles are drawn from known Bradley–Terry strengths with 20% ties, placed
so that counting a tie as half a win for each side leaves P(win) + P(tie)/2 equal to
the BT probability (this needs every pair's BT probability >= 0.1, hence ratings
within +-180 points); the fit should therefore recover the true ratings.

The straightforward method fits each round by scipy.optimize.minimize (BFGS) on the
log-likelihood of that round's resampled battles, one battle at a time.  It is slow,
so only the first --compare-rounds rounds are fitted, on the same resampled counts as
the vectorised bootstrap, and its time is extrapolated to all rounds.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import pandas as pd
from scipy.optimize import minimize

from isqaflow.arena.ratings.bradley_terry import PSEUDO_COUNT, bradley_terry
from isqaflow.arena.ratings.bootstrap import bootstrap_cell_counts, bootstrap_ratings

TIE_SHARE = 0.2
SCALE = 400.0
INITIAL = 1000.0


def synthetic_battles(
    n_battles: int, true_ratings: np.ndarray, rng: np.random.Generator
) -> pd.DataFrame:
    """Random pairs with outcomes whose half-win probabilities follow BT exactly."""
    n_players = len(true_ratings)
    index_a = rng.integers(0, n_players, n_battles)
    index_b = (index_a + rng.integers(1, n_players, n_battles)) % n_players
    p_a = 1.0 / (1.0 + 10.0 ** ((true_ratings[index_b] - true_ratings[index_a]) / SCALE))
    draw = rng.random(n_battles)
    winner = np.where(
        draw < p_a - TIE_SHARE / 2,
        "model_a",
        np.where(draw < p_a + TIE_SHARE / 2, "tie", "model_b"),
    )
    names = np.array([f"player_{i:02d}" for i in range(n_players)], dtype=object)
    return pd.DataFrame({"model_a": names[index_a], "model_b": names[index_b], "winner": winner})


def per_battle_objective(
    round_battles: pd.DataFrame, models: pd.Index
) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    """Negative BT log-likelihood of one round's battles, one term per battle, and its gradient.

    The argument holds the log strengths of all models but the first, which is fixed
    at 0; the same pseudo-count prior as `bradley_terry` is included.
    """
    index_a = models.get_indexer(round_battles["model_a"])
    index_b = models.get_indexer(round_battles["model_b"])
    score_a = round_battles["winner"].map({"model_a": 1.0, "model_b": 0.0, "tie": 0.5}).to_numpy()
    pair_i, pair_j = np.where(~np.eye(len(models), dtype=bool))

    def negative_log_likelihood(free: np.ndarray) -> tuple[float, np.ndarray]:
        theta = np.concatenate([[0.0], free])
        p_a = 1.0 / (1.0 + np.exp(theta[index_b] - theta[index_a]))
        p_prior = 1.0 / (1.0 + np.exp(theta[pair_j] - theta[pair_i]))
        value = -(score_a * np.log(p_a) + (1 - score_a) * np.log1p(-p_a)).sum()
        value -= PSEUDO_COUNT * np.log(p_prior).sum()
        residual = score_a - p_a
        gradient = np.bincount(index_a, -residual, len(models))
        gradient += np.bincount(index_b, residual, len(models))
        gradient += np.bincount(pair_i, -PSEUDO_COUNT * (1 - p_prior), len(models))
        gradient += np.bincount(pair_j, PSEUDO_COUNT * (1 - p_prior), len(models))
        return value, gradient[1:]

    return negative_log_likelihood


def straightforward_fit(round_battles: pd.DataFrame, models: pd.Index) -> pd.Series:
    """BT ratings of one round by BFGS on the per-battle log-likelihood (mean rating 1000)."""
    result = minimize(
        per_battle_objective(round_battles, models),
        np.zeros(len(models) - 1),
        jac=True,
        method="BFGS",
        options={"gtol": 1e-9, "maxiter": 10_000},
    )
    ratings = np.concatenate([[0.0], result.x]) * SCALE / np.log(10.0)
    return pd.Series(ratings - ratings.mean() + INITIAL, index=models)


def largest_score(round_battles: pd.DataFrame, ratings: pd.Series) -> float:
    """Largest |gradient| of the per-battle objective at the given ratings (0 at the exact MLE)."""
    log_strength = ratings.to_numpy() * np.log(10.0) / SCALE
    _, gradient = per_battle_objective(round_battles, ratings.index)(
        log_strength[1:] - log_strength[0]
    )
    return float(np.abs(gradient).max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--battles", type=int, default=30_000)
    parser.add_argument("--players", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compare-rounds", type=int, default=20)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    true_ratings = INITIAL + np.linspace(-180.0, 180.0, args.players)
    battles = synthetic_battles(args.battles, true_ratings, rng)
    print(
        f"{args.battles} battles among {args.players} players, "
        f"{(battles['winner'] == 'tie').mean():.1%} ties, {args.rounds} bootstrap rounds"
    )

    start = time.perf_counter()
    boot = bootstrap_ratings(battles, method="bt", rounds=args.rounds, seed=args.seed)
    vectorised_seconds = time.perf_counter() - start
    print(f"vectorised bootstrap, {args.rounds} rounds: {vectorised_seconds:.3f} s")

    compared = min(args.compare_rounds, args.rounds)
    cells, counts = bootstrap_cell_counts(battles, rounds=compared, seed=args.seed)
    resampled = [cells.loc[cells.index.repeat(counts[r])] for r in range(compared)]
    start = time.perf_counter()
    straightforward = [
        straightforward_fit(round_battles, boot.columns) for round_battles in resampled
    ]
    straightforward_seconds = time.perf_counter() - start
    extrapolated = straightforward_seconds / compared * args.rounds
    print(
        f"per-round scipy fits: {straightforward_seconds:.3f} s measured for {compared} rounds, "
        f"~{extrapolated:.1f} s extrapolated to {args.rounds} rounds "
        f"(~{extrapolated / vectorised_seconds:.0f}x the vectorised time)"
    )
    difference = max((fit - boot.iloc[r]).abs().max() for r, fit in enumerate(straightforward))
    print(f"max |rating difference| over the {compared} compared rounds: {difference:.2e} points")
    vectorised_score = max(largest_score(resampled[r], boot.iloc[r]) for r in range(compared))
    straightforward_score = max(
        largest_score(round_battles, fit) for round_battles, fit in zip(resampled, straightforward)
    )
    print(
        f"max |log-likelihood gradient| at the fits (0 at the exact MLE): "
        f"vectorised {vectorised_score:.1e}, scipy BFGS {straightforward_score:.1e}"
    )

    fitted = bradley_terry(battles)
    table = pd.DataFrame(
        {"true": pd.Series(true_ratings, index=boot.columns), "fitted": fitted},
    )
    table["fitted - true"] = table["fitted"] - table["true"]
    table["boot 2.5%"] = boot.quantile(0.025)
    table["boot 97.5%"] = boot.quantile(0.975)
    print(table.sort_values("true", ascending=False).round(2).to_string())


if __name__ == "__main__":
    main()
