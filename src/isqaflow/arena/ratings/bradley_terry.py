"""Bradley–Terry ratings from pairwise battles: maximum likelihood (batched Newton), pseudo-counts.

The fit only depends on how many battles fall in each (pair, outcome) cell, so a batch
of half-win matrices (the bootstrap's rounds) is fitted at once.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from isqaflow.arena.ratings.battle_codes import SCORE_A, encode_battles

# Pseudo-wins credited in each direction to every ordered pair of models before the
# Bradley–Terry fit; see `bradley_terry`.
PSEUDO_COUNT = 1e-3


def win_matrices(
    index_a: np.ndarray, index_b: np.ndarray, score_a: np.ndarray, counts: np.ndarray, n_models: int
) -> np.ndarray:
    """Half-win matrices (rounds, n, n): entry [r, i, j] = wins of i over j plus half their ties.

    ``index_a``, ``index_b``, ``score_a`` describe battle cells and ``counts`` (rounds,
    cells) how often each cell occurs in each round.
    """
    rounds = counts.shape[0]
    cells_ab = index_a * n_models + index_b
    cells_ba = index_b * n_models + index_a
    round_offset = (np.arange(rounds) * n_models * n_models)[:, None]
    flat = np.concatenate([cells_ab + round_offset, cells_ba + round_offset], axis=1)
    weights = np.concatenate([counts * score_a, counts * (1.0 - score_a)], axis=1)
    wins = np.bincount(flat.ravel(), weights.ravel(), minlength=rounds * n_models * n_models)
    return wins.reshape(rounds, n_models, n_models)


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -x)


def _bt_log_likelihood(wins: np.ndarray, log_strength: np.ndarray) -> np.ndarray:
    """Per-round Bradley–Terry log-likelihood sum_ij wins[i, j] * log P(i beats j)."""
    differences = log_strength[:, :, None] - log_strength[:, None, :]
    return (wins * _log_sigmoid(differences)).sum(axis=(1, 2))


def _fit_log_strengths(wins: np.ndarray, tol: float, max_iter: int) -> np.ndarray:
    """Maximum-likelihood natural-log strengths for a batch of half-win matrices (rounds, n, n).

    Newton's method on all rounds at once, with the gauge fixed to zero mean: the
    negative Hessian is a graph Laplacian with null space 1, so adding 1 1^T makes it
    invertible and the step keeps the sum of log strengths at zero.  A step is halved
    in the rounds where it would lower the likelihood (backtracking); the likelihood is
    concave, so this converges.  Stops when the largest full Newton step is below tol.
    """
    rounds, n_models, _ = wins.shape
    wins_against = wins.transpose(0, 2, 1)
    games = wins + wins_against
    gauge = np.ones((n_models, n_models))
    # Slack for rounding noise when comparing likelihoods of nearly equal points.
    slack = 1e-12 * (1.0 + wins.sum(axis=(1, 2)))
    log_strength = np.zeros((rounds, n_models))
    likelihood = _bt_log_likelihood(wins, log_strength)
    for _ in range(max_iter):
        beats = np.exp(_log_sigmoid(log_strength[:, :, None] - log_strength[:, None, :]))
        beaten_by = beats.transpose(0, 2, 1)
        # sum_j (wins_ij P_ji - wins_ji P_ij), not total wins - expected wins: no cancellation
        # between large, nearly equal numbers when some pairs are (nearly) separated.
        gradient = (wins * beaten_by).sum(axis=2) - (wins_against * beats).sum(axis=2)
        curvature = games * beats * beaten_by
        laplacian = -curvature
        diagonal = np.arange(n_models)
        laplacian[:, diagonal, diagonal] += curvature.sum(axis=2)
        step = np.linalg.solve(laplacian + gauge, gradient[:, :, None])[:, :, 0]
        if np.abs(step).max() < tol:
            return log_strength + step
        step_size = np.ones(rounds)
        for _ in range(60):
            candidate = log_strength + step_size[:, None] * step
            candidate_likelihood = _bt_log_likelihood(wins, candidate)
            worse = candidate_likelihood < likelihood - slack
            if not worse.any():
                break
            step_size[worse] /= 2.0
        log_strength, likelihood = candidate, candidate_likelihood
    raise RuntimeError(f"Bradley–Terry fit did not reach tol={tol} in {max_iter} iterations")


def bt_ratings(
    wins: np.ndarray,
    models: pd.Index,
    base: float,
    scale: float,
    initial: float,
    anchor: str | None,
    tol: float,
    max_iter: int,
    pseudo_count: float,
) -> np.ndarray:
    """Ratings (rounds, n) from half-win matrices: add pseudo-counts, fit, rescale, normalise."""
    if pseudo_count <= 0:
        raise ValueError("pseudo_count must be positive: without it the MLE may not exist")
    if anchor is not None and anchor not in models:
        raise ValueError(f"anchor model {anchor!r} is not in the battles")
    regularised = wins + pseudo_count * (1.0 - np.eye(len(models)))
    ratings = _fit_log_strengths(regularised, tol, max_iter) * (scale / np.log(base))
    if anchor is None:
        reference = ratings.mean(axis=1, keepdims=True)
    else:
        reference = ratings[:, [models.get_loc(anchor)]]
    return ratings - reference + initial


def bradley_terry(
    battles: pd.DataFrame,
    base: float = 10.0,
    scale: float = 400.0,
    initial: float = 1000.0,
    anchor: str | None = None,
    tol: float = 1e-10,
    max_iter: int = 100,
    pseudo_count: float = PSEUDO_COUNT,
) -> pd.Series:
    """Maximum-likelihood Bradley–Terry ratings, sorted descending.

    P(i beats j) = s_i / (s_i + s_j); a tie counts as half a win for each side.  The fit
    uses the aggregated half-win matrix.  Ratings are scale * log_base(s) + const, with
    the constant chosen so the mean rating is ``initial`` or, with ``anchor``, so that
    model rates exactly ``initial``.

    Regularisation: a model that never wins or never loses has no finite MLE, so every
    ordered pair of models is credited ``pseudo_count`` (default 0.001) extra wins, i.e.
    each pair gets 0.002 phantom ties.  This is a weak symmetric prior on rating
    differences: it keeps every fit finite and unique (a separated model lands some
    thousands of points away instead of at infinity) and moves well-observed ratings
    by a negligible amount (A beating B 3 times of 4 gives a difference of
    400 * log10(3.001 / 1.001) = 190.73 instead of 190.85).  ``tol`` bounds the last
    Newton step in natural-log strength.
    """
    models, index_a, index_b, winner_code = encode_battles(battles)
    wins = win_matrices(
        index_a, index_b, SCORE_A[winner_code], np.ones((1, len(battles))), len(models)
    )
    ratings = bt_ratings(wins, models, base, scale, initial, anchor, tol, max_iter, pseudo_count)
    return pd.Series(ratings[0], index=models, name="rating").sort_values(ascending=False)
