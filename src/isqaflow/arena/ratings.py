"""Arena ratings: bootstrap resamples and intervals, battles from verdicts, win rates.

The fits themselves are :mod:`isqaflow.arena.elo` (online Elo) and
:mod:`isqaflow.arena.bradley_terry`; battles are checked and encoded by
:mod:`isqaflow.arena.battle_codes`.

Reported points: Bradley–Terry is the maximum-likelihood fit; Elo is the median of
its bootstrap (`elo_with_intervals`), because one online pass depends on the order of
the battles.

Battles follow the Chatbot Arena convention: a DataFrame with columns ``model_a``,
``model_b`` and ``winner`` in {"model_a", "model_b", "tie"}.  The defaults (K=4,
base 10, scale 400, initial 1000) are those of RAG-QA Arena and Chatbot Arena.

The bootstraps are vectorised across rounds: Bradley–Terry only depends on how many
battles fall in each (pair, outcome) cell, so all rounds' cell counts are drawn at
once and fitted together by batched Newton steps; Elo runs all rounds side by side,
one battle position at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import numpy as np
import pandas as pd

from isqaflow.arena.agreement import verdict_to_score
from isqaflow.arena.battle_codes import SCORE_A, WINNERS, encode_battles
from isqaflow.arena.bradley_terry import PSEUDO_COUNT, bt_ratings, win_matrices
from isqaflow.arena.elo import run_elo

OUTCOMES = ("win", "tie", "loss", "invalid")

# Battle positions drawn per block in the Elo bootstrap (bounds memory at
# _ELO_BLOCK x rounds indices; part of what a seed reproduces).
_ELO_BLOCK = 512


def bootstrap_cell_counts(
    battles: pd.DataFrame, rounds: int = 1000, seed: int = 0
) -> tuple[pd.DataFrame, np.ndarray]:
    """Bootstrap resamples of the battles as counts per distinct (model_a, model_b, winner) cell.

    Resampling n battles with replacement gives cell counts distributed
    Multinomial(n, observed cell shares), so all rounds are drawn in one call.
    Returns the cells (one row per distinct battle) and counts of shape (rounds, cells);
    `bootstrap_ratings(method="bt")` with the same seed fits exactly these counts.
    """
    models, index_a, index_b, winner_code = encode_battles(battles)
    cell_code = (index_a * len(models) + index_b) * len(WINNERS) + winner_code
    unique_codes, observed = np.unique(cell_code, return_counts=True)
    pair_code, cell_winner = np.divmod(unique_codes, len(WINNERS))
    cell_a, cell_b = np.divmod(pair_code, len(models))
    cells = pd.DataFrame(
        {
            "model_a": models[cell_a],
            "model_b": models[cell_b],
            "winner": np.asarray(WINNERS, dtype=object)[cell_winner],
        }
    )
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(len(battles), observed / len(battles), size=rounds)
    return cells, counts


def _resampled_orders(
    n_battles: int, rounds: int, rng: np.random.Generator
) -> Iterator[np.ndarray]:
    """Blocks (positions, rounds) of battle indices drawn with replacement, a sequence per round."""
    for start in range(0, n_battles, _ELO_BLOCK):
        yield rng.integers(0, n_battles, size=(min(_ELO_BLOCK, n_battles - start), rounds))


def bootstrap_ratings(
    battles: pd.DataFrame,
    method: Literal["elo", "bt"],
    rounds: int = 1000,
    seed: int = 0,
    **kwargs: float | str | None,
) -> pd.DataFrame:
    """Ratings on ``rounds`` bootstrap resamples of the battles (rows = rounds, columns = models).

    Each round resamples the battles with replacement (numpy Generator seeded with
    ``seed``: the same seed gives identical output).  ``"bt"`` fits all rounds together
    from multinomial cell counts (see `bootstrap_cell_counts`); ``"elo"`` runs every
    round's resampled battle sequence side by side.  ``kwargs`` go to `bradley_terry`
    or `online_elo` (k, base, scale, initial, ...).
    """
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    models, index_a, index_b, winner_code = encode_battles(battles)
    if method == "bt":
        options = {
            "base": 10.0,
            "scale": 400.0,
            "initial": 1000.0,
            "anchor": None,
            "tol": 1e-10,
            "max_iter": 100,
            "pseudo_count": PSEUDO_COUNT,
        }
        unknown = set(kwargs) - set(options)
        if unknown:
            raise TypeError(f"unexpected options for method='bt': {sorted(unknown)}")
        options.update(kwargs)
        cells, counts = bootstrap_cell_counts(battles, rounds, seed)
        cell_a = models.get_indexer(cells["model_a"])
        cell_b = models.get_indexer(cells["model_b"])
        cell_score = SCORE_A[pd.Index(WINNERS).get_indexer(cells["winner"])]
        wins = win_matrices(cell_a, cell_b, cell_score, counts, len(models))
        ratings = bt_ratings(wins, models, **options)
    elif method == "elo":
        options = {"k": 4.0, "base": 10.0, "scale": 400.0, "initial": 1000.0}
        unknown = set(kwargs) - set(options)
        if unknown:
            raise TypeError(f"unexpected options for method='elo': {sorted(unknown)}")
        options.update(kwargs)
        orders = _resampled_orders(len(battles), rounds, np.random.default_rng(seed))
        ratings = run_elo(
            index_a, index_b, SCORE_A[winner_code], orders, len(models), rounds, **options
        )
    else:
        raise ValueError(f"method must be 'elo' or 'bt', got {method!r}")
    return pd.DataFrame(ratings, index=pd.RangeIndex(rounds, name="round"), columns=models)


def bt_separation(battles: pd.DataFrame, rounds: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Per model: is it separated in the battles, and in what share of the bootstrap resamples?

    A model that wins none or loses none of its battles (a tie counts half each way)
    has no finite Bradley-Terry maximum-likelihood rating: its fitted rating is set by
    the pseudo-count prior (:data:`PSEUDO_COUNT`), thousands of points away, and so is
    any percentile bound that more than alpha/2 of the resamples decide.  The
    resamples are exactly those of ``bootstrap_ratings(method="bt")`` with the same
    seed.  Returns ``separated`` (bool, in the battles themselves) and
    ``separated_share`` (share of rounds), indexed by model.  (Separation of a group
    of models -- A and B always beat C and D -- is not flagged here.)
    """
    models, index_a, index_b, winner_code = encode_battles(battles)
    point = win_matrices(index_a, index_b, SCORE_A[winner_code], np.ones((1, len(battles))), len(models))
    cells, counts = bootstrap_cell_counts(battles, rounds, seed)
    cell_a = models.get_indexer(cells["model_a"])
    cell_b = models.get_indexer(cells["model_b"])
    cell_score = SCORE_A[pd.Index(WINNERS).get_indexer(cells["winner"])]
    resampled = win_matrices(cell_a, cell_b, cell_score, counts, len(models))

    def separated(wins: np.ndarray) -> np.ndarray:
        won, lost = wins.sum(axis=2), wins.sum(axis=1)
        played = (won + lost) > 0
        return played & ((won == 0) | (lost == 0))

    return pd.DataFrame(
        {"separated": separated(point)[0], "separated_share": separated(resampled).mean(axis=0)},
        index=models,
    )


def rating_intervals(point: pd.Series, boot: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """Point ratings with bootstrap percentile intervals and interval-separation ranks.

    ``rank`` = 1 + the number of models whose lower bound exceeds this model's upper
    bound (Chatbot Arena's ranking: models whose intervals overlap share ranks).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must lie strictly between 0 and 1")
    missing = point.index.difference(boot.columns)
    if len(missing):
        raise ValueError(f"no bootstrap ratings for {list(missing)}")
    samples = boot[point.index]
    lower = samples.quantile(alpha / 2).to_numpy()
    upper = samples.quantile(1 - alpha / 2).to_numpy()
    rank = 1 + (lower[None, :] > upper[:, None]).sum(axis=1)
    table = pd.DataFrame(
        {"rating": point.to_numpy(dtype=float), "lower": lower, "upper": upper, "rank": rank},
        index=pd.Index(point.index, name="model"),
    )
    return table.sort_values("rating", ascending=False)


def elo_with_intervals(
    battles: pd.DataFrame,
    rounds: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
    **kwargs: float,
) -> pd.DataFrame:
    """Elo ratings with bootstrap percentile intervals; the point is the bootstrap median.

    Online Elo depends on the order of the battles: one pass in row order weighs the
    last battles most, so its result can fall outside the interval of the resampled
    sequences (A beating B 60 times and then losing 60 times ends with B about 85
    points ahead, while every shuffled order centres on a draw).  The point is
    therefore the median over the bootstrap rounds (as FastChat's Chatbot Arena code
    reports it), which always lies inside its own interval.  ``kwargs`` go to
    `online_elo` (k, base, scale, initial).  Columns as in `rating_intervals`.
    """
    boot = bootstrap_ratings(battles, "elo", rounds=rounds, seed=seed, **kwargs)
    return rating_intervals(boot.median(), boot, alpha)


def battles_from_verdicts(
    df: pd.DataFrame,
    system_1: str = "system_1",
    system_2: str = "system_2",
    verdict: str = "verdict",
) -> tuple[pd.DataFrame, int]:
    """Battles from judged pairs, and how many pairs had no valid verdict.

    Verdict "1" means the first system won, "2" the second, "tie" a tie; a missing
    verdict (None/NaN: the judge's answer could not be parsed) drops the pair rather
    than counting it as a tie.  The battles keep the index of ``df``.
    """
    scores = df[verdict].map(verdict_to_score)
    valid = scores.notna()
    battles = pd.DataFrame(
        {
            "model_a": df.loc[valid, system_1],
            "model_b": df.loc[valid, system_2],
            "winner": scores[valid].map({1: "model_a", -1: "model_b", 0: "tie"}),
        }
    )
    return battles, int((~valid).sum())


def win_rates(
    outcomes: pd.DataFrame, by: list[str] | None = None, overall_label: str = "overall"
) -> pd.DataFrame:
    """Win and win-or-tie rates of each model against the reference answers.

    ``outcomes`` has a ``model`` column, an ``outcome`` column in {"win", "tie",
    "loss", "invalid"} and the optional grouping columns ``by``.  Invalid judgements
    are counted (``n_invalid``) but left out of the denominator ``n_valid``.  With
    ``by``, rows pooled over all groups are added with every grouping column set to
    ``overall_label``.  Rates are NaN when a model has no valid judgement.
    """
    by = list(by or [])
    unknown = set(outcomes["outcome"]) - set(OUTCOMES)
    if unknown:
        raise ValueError(f"outcome must be one of {OUTCOMES}, got {sorted(map(str, unknown))}")

    def count(keys: list[str]) -> pd.DataFrame:
        table = outcomes.groupby(keys)["outcome"].value_counts().unstack(fill_value=0)
        table = table.reindex(columns=list(OUTCOMES), fill_value=0)
        table.columns = [f"n_{outcome}" for outcome in OUTCOMES]
        return table.reset_index()

    counts = count([*by, "model"])
    if by:
        for key in by:
            if (outcomes[key] == overall_label).any():
                raise ValueError(f"column {key!r} already holds the label {overall_label!r}")
        pooled = count(["model"]).assign(**{key: overall_label for key in by})
        counts = pd.concat([counts.astype({key: object for key in by}), pooled[counts.columns]])
    counts = counts.reset_index(drop=True)
    counts["n_valid"] = counts["n_win"] + counts["n_tie"] + counts["n_loss"]
    valid = counts["n_valid"].where(counts["n_valid"] > 0)
    counts["win_rate"] = counts["n_win"] / valid
    counts["win_tie_rate"] = (counts["n_win"] + counts["n_tie"]) / valid
    return counts
