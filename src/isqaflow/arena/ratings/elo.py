"""Online Elo ratings from pairwise battles: one pass in row order, or many sequences side by side.

The defaults (K=4, base 10, scale 400, initial 1000) are those of RAG-QA Arena and
Chatbot Arena.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from isqaflow.arena.ratings.battle_codes import SCORE_A, encode_battles


def run_elo(
    index_a: np.ndarray,
    index_b: np.ndarray,
    score_a: np.ndarray,
    orders: Iterator[np.ndarray],
    n_models: int,
    rounds: int,
    k: float,
    base: float,
    scale: float,
    initial: float,
) -> np.ndarray:
    """Sequential Elo for several rounds at once; returns ratings of shape (rounds, n_models).

    ``orders`` yields blocks of battle indices of shape (positions, rounds): column r
    is the next stretch of round r's battle sequence.  Each step updates one battle
    in every round with a few array operations over the rounds.
    """
    ratings = np.full(n_models * rounds, float(initial))  # flat: model * rounds + round
    round_ids = np.arange(rounds)
    exponent_per_point = np.log(base) / scale
    for order in orders:
        flat_a = index_a[order] * rounds + round_ids
        flat_b = index_b[order] * rounds + round_ids
        for position_a, position_b, score in zip(flat_a, flat_b, score_a[order]):
            rating_a = ratings[position_a]
            rating_b = ratings[position_b]
            expected_a = 1.0 / (1.0 + np.exp((rating_b - rating_a) * exponent_per_point))
            change = k * (score - expected_a)
            ratings[position_a] = rating_a + change
            ratings[position_b] = rating_b - change
    return ratings.reshape(n_models, rounds).T


def online_elo(
    battles: pd.DataFrame,
    k: float = 4.0,
    base: float = 10.0,
    scale: float = 400.0,
    initial: float = 1000.0,
) -> pd.Series:
    """Elo ratings updated battle by battle in row order, sorted descending.

    Expected score of A is 1 / (1 + base**((r_B - r_A) / scale)); a win scores 1,
    a tie 0.5 for each side; both ratings move by K * (score - expected) in
    opposite directions.
    """
    models, index_a, index_b, winner_code = encode_battles(battles)
    in_row_order = iter([np.arange(len(battles))[:, None]])
    score_a = SCORE_A[winner_code]
    ratings = run_elo(
        index_a,
        index_b,
        score_a,
        in_row_order,
        len(models),
        1,
        k=k,
        base=base,
        scale=scale,
        initial=initial,
    )
    return pd.Series(ratings[0], index=models, name="rating").sort_values(ascending=False)
