"""Arena ratings: bootstrap resamples and intervals, battles from verdicts, win rates.

The fits themselves are :mod:`isqaflow.arena.ratings.elo` (online Elo) and
:mod:`isqaflow.arena.ratings.bradley_terry`; battles are checked and encoded by
:mod:`isqaflow.arena.ratings.battle_codes`.

Reported points: Bradley–Terry is the maximum-likelihood fit; Elo is the median of
its bootstrap (`elo_with_intervals`), because one online pass depends on the order of
the battles.

Battles follow the Chatbot Arena convention: a DataFrame with columns ``model_a``,
``model_b`` and ``winner`` in {"model_a", "model_b", "tie"}.  The defaults (K=4,
base 10, scale 400, initial 1000) are those of RAG-QA Arena and Chatbot Arena.

**Resampling unit.**  Where the systems answer the same queries, their battles over one
query are not independent (one hard query moves them all): pass ``groups`` (a query id per
battle) and every bootstrap resamples whole queries with all their battles (a cluster
bootstrap); without it, battles are resampled one by one.

**Separation.**  A resample in which the win graph (i -> j when i wins or ties against j at
least once) is not strongly connected has no finite maximum-likelihood fit: some rating
there is set by the pseudo-count prior, thousands of points away, and because the ratings
are centred on their mean, that shift moves *every* player's rating in that resample.
:func:`bt_separation` reports both the share of resamples in which the player itself is
separated and the share in which any player (or group of players) is, which is the share in
which this player's centred rating depends on the prior.

**Elo's convergence.**  Online Elo with a small K over few battles has not moved far from
its initial rating: it shrinks every difference.  :func:`elo_convergence` measures it as the
spread of the Elo points over the spread of the Bradley-Terry points on the same battles;
outside [0.8, 1.25] Elo is not converged, and the tables give it no rank (Bradley-Terry, the
maximum-likelihood fit, is the headline, as FastChat reports today).

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

from isqaflow.arena.judging.agreement import verdict_to_score
from isqaflow.arena.ratings.battle_codes import SCORE_A, WINNERS, encode_battles
from isqaflow.arena.ratings.bradley_terry import PSEUDO_COUNT, bt_ratings, win_matrices
from isqaflow.arena.ratings.elo import run_elo

OUTCOMES = ("win", "tie", "loss", "invalid")
# What a failed (invalid) judgment is in a win rate (config arena.failed_judgments): "exclude"
# -- left out of the denominator, the paper's rule and ours; "tie" -- RAG-QA Arena's code
# (compute_correlation.aggregate_evaluators counts it as a tie, report_results.py divides by
# every judged query).  docs/fidelity.md says so.
FAILED_JUDGMENT_RULES = ("exclude", "tie")

# Battle positions drawn per block in the Elo bootstrap (bounds memory at
# _ELO_BLOCK x rounds indices; part of what a seed reproduces).
_ELO_BLOCK = 512


ELO_CONVERGED = (0.8, 1.25)  # Elo spread / Bradley-Terry spread counted as converged


def _query_draws(
    groups: np.ndarray, rounds: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(query index of each battle, multiplicities (rounds, queries) of a resample of the queries)."""
    _, query_of = np.unique(np.asarray(groups).astype(str), return_inverse=True)
    n_queries = int(query_of.max()) + 1
    return query_of, rng.multinomial(n_queries, np.full(n_queries, 1.0 / n_queries), size=rounds)


def bootstrap_cell_counts(
    battles: pd.DataFrame, rounds: int = 1000, seed: int = 0, groups: np.ndarray | None = None
) -> tuple[pd.DataFrame, np.ndarray]:
    """Bootstrap resamples of the battles as counts per distinct (model_a, model_b, winner) cell.

    Resampling n battles with replacement gives cell counts distributed
    Multinomial(n, observed cell shares), so all rounds are drawn in one call.  With
    ``groups`` (a query id per battle) the queries are resampled instead, each with all its
    battles: the counts are the query multiplicities times each query's cell counts.
    Returns the cells (one row per distinct battle) and counts of shape (rounds, cells);
    `bootstrap_ratings(method="bt")` with the same seed and groups fits exactly these counts.
    """
    models, index_a, index_b, winner_code = encode_battles(battles)
    cell_code = (index_a * len(models) + index_b) * len(WINNERS) + winner_code
    unique_codes, cell_of, observed = np.unique(cell_code, return_inverse=True, return_counts=True)
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
    if groups is None:
        counts = rng.multinomial(len(battles), observed / len(battles), size=rounds)
    else:
        query_of, draws = _query_draws(groups, rounds, rng)
        per_query = np.zeros((draws.shape[1], len(unique_codes)))
        np.add.at(per_query, (query_of, cell_of), 1.0)
        counts = draws @ per_query
    return cells, counts


def _resampled_orders(
    n_battles: int, rounds: int, rng: np.random.Generator
) -> Iterator[np.ndarray]:
    """Blocks (positions, rounds) of battle indices drawn with replacement, a sequence per round."""
    for start in range(0, n_battles, _ELO_BLOCK):
        yield rng.integers(0, n_battles, size=(min(_ELO_BLOCK, n_battles - start), rounds))


def _resampled_query_orders(
    groups: np.ndarray, rounds: int, rng: np.random.Generator
) -> np.ndarray:
    """(positions, rounds) battle indices: each round the battles of resampled queries in a random
    order, padded with the index ``len(groups)`` (a battle that changes nothing)."""
    query_of, draws = _query_draws(groups, rounds, rng)
    members = [np.flatnonzero(query_of == q) for q in range(draws.shape[1])]
    sequences = [
        rng.permutation(np.concatenate([members[q] for q in np.repeat(np.arange(len(members)), d)]))
        for d in draws
    ]
    longest = max(len(seq) for seq in sequences)
    orders = np.full((longest, rounds), len(groups))
    for r, seq in enumerate(sequences):
        orders[: len(seq), r] = seq
    return orders


def bootstrap_ratings(
    battles: pd.DataFrame,
    method: Literal["elo", "bt"],
    rounds: int = 1000,
    seed: int = 0,
    groups: np.ndarray | None = None,
    **kwargs: float | str | None,
) -> pd.DataFrame:
    """Ratings on ``rounds`` bootstrap resamples of the battles (rows = rounds, columns = models).

    Each round resamples the battles with replacement, or with ``groups`` (a query id per
    battle) the queries with all their battles (numpy Generator seeded with ``seed``: the
    same seed gives identical output).  ``"bt"`` fits all rounds together
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
        cells, counts = bootstrap_cell_counts(battles, rounds, seed, groups)
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
        if groups is None:
            orders = _resampled_orders(len(battles), rounds, np.random.default_rng(seed))
            ratings = run_elo(
                index_a, index_b, SCORE_A[winner_code], orders, len(models), rounds, **options
            )
        else:  # the padding battle: an extra model against itself, a tie (no change)
            orders = iter([_resampled_query_orders(groups, rounds, np.random.default_rng(seed))])
            pad = len(models)
            ratings = run_elo(
                np.r_[index_a, pad],
                np.r_[index_b, pad],
                np.r_[SCORE_A[winner_code], 0.5],
                orders,
                len(models) + 1,
                rounds,
                **options,
            )[:, :-1]
    else:
        raise ValueError(f"method must be 'elo' or 'bt', got {method!r}")
    return pd.DataFrame(ratings, index=pd.RangeIndex(rounds, name="round"), columns=models)


def _not_connected(wins: np.ndarray) -> np.ndarray:
    """Per round: the win graph (i -> j when wins[r, i, j] > 0) is not strongly connected
    (no finite maximum-likelihood fit; a player without battles counts as cut off)."""
    from scipy.sparse.csgraph import connected_components

    return np.array(
        [connected_components(w > 0, directed=True, connection="strong")[0] > 1 for w in wins]
    )


def bt_separation(
    battles: pd.DataFrame, rounds: int = 1000, seed: int = 0, groups: np.ndarray | None = None
) -> pd.DataFrame:
    """Per model: is it separated in the battles, in what share of the bootstrap resamples,
    and in what share does the prior set its centred rating?

    A model that wins none or loses none of its battles (a tie counts half each way)
    has no finite Bradley-Terry maximum-likelihood rating: its fitted rating is set by
    the pseudo-count prior (:data:`PSEUDO_COUNT`), thousands of points away, and so is
    any percentile bound that more than alpha/2 of the resamples decide.  The same holds
    for a group (A and B always beat C and D), and, through the centring on the mean
    rating, for every other player of that resample.  The resamples are exactly those of
    ``bootstrap_ratings(method="bt")`` with the same seed and groups.  Returns
    ``separated`` (bool, the model alone, in the battles themselves), ``separated_share``
    (share of rounds in which the model alone is separated) and ``prior_share`` (share of
    rounds whose win graph is not strongly connected: the model's centred rating there
    depends on the prior), indexed by model.
    """
    models, index_a, index_b, winner_code = encode_battles(battles)
    point = win_matrices(
        index_a, index_b, SCORE_A[winner_code], np.ones((1, len(battles))), len(models)
    )
    cells, counts = bootstrap_cell_counts(battles, rounds, seed, groups)
    cell_a = models.get_indexer(cells["model_a"])
    cell_b = models.get_indexer(cells["model_b"])
    cell_score = SCORE_A[pd.Index(WINNERS).get_indexer(cells["winner"])]
    resampled = win_matrices(cell_a, cell_b, cell_score, counts, len(models))

    def separated(wins: np.ndarray) -> np.ndarray:
        won, lost = wins.sum(axis=2), wins.sum(axis=1)
        played = (won + lost) > 0
        return played & ((won == 0) | (lost == 0))

    return pd.DataFrame(
        {
            "separated": separated(point)[0],
            "separated_share": separated(resampled).mean(axis=0),
            "prior_share": np.full(len(models), _not_connected(resampled).mean()),
        },
        index=models,
    )


def elo_convergence(elo: pd.Series, bt: pd.Series) -> float:
    """Spread (standard deviation) of the Elo points over that of the Bradley-Terry points of
    the same players: near 1 when online Elo has converged to the maximum-likelihood scale,
    well below 1 when a small K over few battles has not moved it from its initial rating."""
    bt_spread = float(bt.std(ddof=0))
    return float(elo.reindex(bt.index).std(ddof=0)) / bt_spread if bt_spread > 0 else float("nan")


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
    groups: np.ndarray | None = None,
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
    boot = bootstrap_ratings(battles, "elo", rounds=rounds, seed=seed, groups=groups, **kwargs)
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
    outcomes: pd.DataFrame,
    by: list[str] | None = None,
    overall_label: str = "overall",
    failed: str = "exclude",
) -> pd.DataFrame:
    """Win and win-or-tie rates of each model against the reference answers.

    ``outcomes`` has a ``model`` column, an ``outcome`` column in {"win", "tie",
    "loss", "invalid"} and the optional grouping columns ``by``.  Invalid judgements
    are counted (``n_invalid``); with ``failed="exclude"`` (the paper's rule) they are left
    out of the denominator ``n_valid``, with ``failed="tie"`` (RAG-QA Arena's code) they count
    as ties: in the denominator and in the win-or-tie rate, not in ``n_tie``.  With
    ``by``, rows pooled over all groups are added with every grouping column set to
    ``overall_label``.  Rates are NaN when a model has no judgement that counts.
    """
    if failed not in FAILED_JUDGMENT_RULES:
        raise ValueError(f"failed must be one of {FAILED_JUDGMENT_RULES}, got {failed!r}")
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
    as_ties = counts["n_invalid"] if failed == "tie" else 0
    denominator = counts["n_valid"] + as_ties
    denominator = denominator.where(denominator > 0)
    counts["win_rate"] = counts["n_win"] / denominator
    counts["win_tie_rate"] = (counts["n_win"] + counts["n_tie"] + as_ties) / denominator
    return counts
