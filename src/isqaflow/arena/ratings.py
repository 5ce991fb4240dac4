"""Arena ratings from pairwise battles: online Elo, Bradley–Terry, bootstrap intervals, win rates.

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

WINNERS = ("model_a", "model_b", "tie")
OUTCOMES = ("win", "tie", "loss", "invalid")

# Score of model_a for each winner code (index into WINNERS).
_SCORE_A = np.array([1.0, 0.0, 0.5])

# Pseudo-wins credited in each direction to every ordered pair of models before the
# Bradley–Terry fit; see `bradley_terry`.
PSEUDO_COUNT = 1e-3

# Battle positions drawn per block in the Elo bootstrap (bounds memory at
# _ELO_BLOCK x rounds indices; part of what a seed reproduces).
_ELO_BLOCK = 512


def _encode_battles(battles: pd.DataFrame) -> tuple[pd.Index, np.ndarray, np.ndarray, np.ndarray]:
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


def _run_elo(
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
    models, index_a, index_b, winner_code = _encode_battles(battles)
    in_row_order = iter([np.arange(len(battles))[:, None]])
    score_a = _SCORE_A[winner_code]
    ratings = _run_elo(
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


def _win_matrices(
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


def _bt_ratings(
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
    models, index_a, index_b, winner_code = _encode_battles(battles)
    wins = _win_matrices(
        index_a, index_b, _SCORE_A[winner_code], np.ones((1, len(battles))), len(models)
    )
    ratings = _bt_ratings(wins, models, base, scale, initial, anchor, tol, max_iter, pseudo_count)
    return pd.Series(ratings[0], index=models, name="rating").sort_values(ascending=False)


def bootstrap_cell_counts(
    battles: pd.DataFrame, rounds: int = 1000, seed: int = 0
) -> tuple[pd.DataFrame, np.ndarray]:
    """Bootstrap resamples of the battles as counts per distinct (model_a, model_b, winner) cell.

    Resampling n battles with replacement gives cell counts distributed
    Multinomial(n, observed cell shares), so all rounds are drawn in one call.
    Returns the cells (one row per distinct battle) and counts of shape (rounds, cells);
    `bootstrap_ratings(method="bt")` with the same seed fits exactly these counts.
    """
    models, index_a, index_b, winner_code = _encode_battles(battles)
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
    models, index_a, index_b, winner_code = _encode_battles(battles)
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
        cell_score = _SCORE_A[pd.Index(WINNERS).get_indexer(cells["winner"])]
        wins = _win_matrices(cell_a, cell_b, cell_score, counts, len(models))
        ratings = _bt_ratings(wins, models, **options)
    elif method == "elo":
        options = {"k": 4.0, "base": 10.0, "scale": 400.0, "initial": 1000.0}
        unknown = set(kwargs) - set(options)
        if unknown:
            raise TypeError(f"unexpected options for method='elo': {sorted(unknown)}")
        options.update(kwargs)
        orders = _resampled_orders(len(battles), rounds, np.random.default_rng(seed))
        ratings = _run_elo(
            index_a, index_b, _SCORE_A[winner_code], orders, len(models), rounds, **options
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
    models, index_a, index_b, winner_code = _encode_battles(battles)
    point = _win_matrices(index_a, index_b, _SCORE_A[winner_code], np.ones((1, len(battles))), len(models))
    cells, counts = bootstrap_cell_counts(battles, rounds, seed)
    cell_a = models.get_indexer(cells["model_a"])
    cell_b = models.get_indexer(cells["model_b"])
    cell_score = _SCORE_A[pd.Index(WINNERS).get_indexer(cells["winner"])]
    resampled = _win_matrices(cell_a, cell_b, cell_score, counts, len(models))

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
