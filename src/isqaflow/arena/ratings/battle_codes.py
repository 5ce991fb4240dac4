"""Battles in the Chatbot Arena convention checked and encoded as model indices and winner codes.

A DataFrame of battles has columns ``model_a``, ``model_b`` and ``winner`` in
{"model_a", "model_b", "tie"}.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

WINNERS = ("model_a", "model_b", "tie")

# Score of model_a for each winner code (index into WINNERS).
SCORE_A = np.array([1.0, 0.0, 0.5])


def encode_battles(battles: pd.DataFrame) -> tuple[pd.Index, np.ndarray, np.ndarray, np.ndarray]:
    """Validate battles; return (models sorted by name, index of model_a, of model_b, winner code).

    Sorting the models by name makes every fit independent of the order in which
    models first appear.
    """
    missing = {"model_a", "model_b", "winner"} - set(battles.columns)
    if missing:
        raise ValueError(f"battles lack the columns {sorted(missing)}")
    if battles.empty:
        raise ValueError("no battles to rate")
    names_a = battles["model_a"].to_numpy()
    names_b = battles["model_b"].to_numpy()
    models = pd.Index(sorted(set(names_a) | set(names_b)), name="model")
    index_a = models.get_indexer(names_a)
    index_b = models.get_indexer(names_b)
    winner_code = pd.Index(WINNERS).get_indexer(battles["winner"])
    if (winner_code < 0).any():
        unknown = sorted(set(battles["winner"][winner_code < 0].astype(str)))
        raise ValueError(f"winner must be one of {WINNERS}, got {unknown}")
    if (index_a == index_b).any():
        raise ValueError("a battle pits a model against itself")
    return models, index_a, index_b, winner_code
