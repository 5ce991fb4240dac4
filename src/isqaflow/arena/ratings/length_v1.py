"""AlpacaEval 2.0's leaderboard LC: ``length_controlled_v1``, the GLM regularized towards gamed baselines.

:mod:`isqaflow.arena.ratings.length` fits AlpacaEval's GLM on a system's own pairs
(alpaca_eval's ``length_controlled_noreg``). The published leaderboard uses
``length_controlled_v1`` (``alpaca_eval.metrics.glm_winrate`` of alpaca-eval 0.6.6): the same
formula

    logit P(system wins on x) = theta * [not gamed] + phi * tanh(delta_len / sd) + psi * gamma_x

fit on the system's pairs **together with the pairs of "gamed" baselines** -- the baseline
itself prompted to be verbose and to be concise, judged against the baseline. Their rows have no
intercept (the indicator ``not_gamed_baseline`` is 0: a baseline cannot beat itself but through
its length) and weight ``lambda / 2`` each (``regularize_to_baseline_lambda`` 0.2, "divided by 2
because there are two gamed baselines"), the system's rows weight 1; so they pull the length
slope phi and the difficulty weight psi towards what length alone does to the baseline, and the
intercept theta alone carries the system. ``gamma_x`` is a fixed per-instruction difficulty
(AlpacaEval downloads it with the gamed rows, ``df_gamed.csv``, from the Hugging Face Hub).

The fit is alpaca_eval's ``fit_LogisticRegressionCV`` with the weights: each row twice (label 1
weighted ``w * p``, label 0 ``w * (1 - p)``), L1 by liblinear without intercept, the penalty C
among ``logspace(-4, 4, 10)`` by 5-fold ``GroupKFold`` over rows (gamed rows first, then the
system's, as alpaca_eval concatenates them), scored by the weighted soft log loss (the mean of
``w * loss`` over the fold), refit on all rows at the chosen C. The LC win rate is the mean over
the system's pairs of ``sigmoid(theta + psi * gamma_x)``. Internally the length difference is
alpaca_eval's, baseline minus system (its ``output_1`` minus ``output_2``); the reported ``phi``
is in this project's direction (system minus baseline: positive when the judge favours length).
tests/unit/arena/test_length_v1.py compares it with alpaca_eval's own function on the same inputs
(tests/fixtures/make_lc_v1_reference.py).

Inputs are plain frames (no file formats here): ``pairs`` and ``gamed`` with columns query,
preference (the system's, in [0, 1]), len_system and len_baseline (``gamed`` also system, one
name per gamed baseline); ``difficulty`` a Series query -> gamma.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from isqaflow.arena.ratings.length import CS, l1_model, sigmoid, query_difficulty
from isqaflow.arena.ratings.length_inputs import (
    FOLDS,
    check_preferences,
    identification,
    raw_win_rate,
)
from isqaflow.seeds import keyed_rng

LAMBDA = 0.2  # alpaca_eval's regularize_to_baseline_lambda of length_controlled_v1


@dataclass(frozen=True)
class V1Fit:
    """One system's ``length_controlled_v1`` fit: LC win rate (%), theta, phi (system minus
    baseline direction), psi, the chosen C."""

    lc: float
    theta: float
    phi: float
    psi: float
    C: float


def _std_delta(len_system, len_baseline) -> np.ndarray:
    """alpaca_eval's std_delta_len: (baseline - system) / its sample sd (0 when all are equal)."""
    delta = np.asarray(len_baseline, dtype=float) - np.asarray(len_system, dtype=float)
    sd = delta.std(ddof=1) if len(delta) > 1 else 0.0
    return delta / sd if sd > 0 else np.zeros_like(delta)


def difficulty_of(queries: pd.Series, difficulty: pd.Series, what: str) -> np.ndarray:
    """gamma of each query; a query the difficulties do not know is a named error."""
    missing = sorted(set(queries) - set(difficulty.index), key=str)
    if missing:
        raise ValueError(
            f"{what}: {len(missing)} queries have no instruction difficulty "
            f"(first: {missing[0]!r}); length_controlled_v1 needs one for every query"
        )
    return queries.map(difficulty).to_numpy(dtype=float)


def design(
    pairs: pd.DataFrame, difficulty: pd.Series, gamed: pd.DataFrame | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(X with alpaca_eval's columns [tanh(std_delta_len), difficulty, not_gamed], y, weights,
    the number of gamed rows first): the gamed baselines' rows (each standardized over its own
    pairs) then the system's."""
    blocks, ys, ws = [], [], []
    parts = [] if gamed is None else [g for _, g in gamed.groupby("system", sort=False)]
    for g in parts:
        blocks.append(
            np.column_stack(
                [
                    np.tanh(_std_delta(g["len_system"], g["len_baseline"])),
                    difficulty_of(g["query"], difficulty, f"gamed baseline {g['system'].iloc[0]}"),
                    np.zeros(len(g)),
                ]
            )
        )
        ys.append(g["preference"].to_numpy(dtype=float))
        ws.append(np.full(len(g), LAMBDA / 2))
    n_gamed = sum(len(b) for b in blocks)
    blocks.append(
        np.column_stack(
            [
                np.tanh(_std_delta(pairs["len_system"], pairs["len_baseline"])),
                difficulty_of(pairs["query"], difficulty, "system"),
                np.ones(len(pairs)),
            ]
        )
    )
    ys.append(pairs["preference"].to_numpy(dtype=float))
    ws.append(np.ones(len(pairs)))
    return np.vstack(blocks), np.concatenate(ys), np.concatenate(ws), n_gamed


def _fit(X: np.ndarray, y: np.ndarray, w: np.ndarray, C: float, random_state=None) -> np.ndarray:
    """Weighted soft-label L1 fit at C (alpaca_eval's duplication; liblinear's non-convergence
    warnings silenced for the many cross-validation and bootstrap fits). ``random_state``: the
    seed source of liblinear's coordinate order (default 123, alpaca_eval's)."""
    from sklearn.exceptions import ConvergenceWarning

    Xd, yd = np.vstack([X, X]), np.r_[np.ones(len(y)), np.zeros(len(y))]
    wd = np.r_[w * y, w * (1 - y)]
    for label in (0, 1):  # all wins (or losses): keep the empty class, negligibly
        if wd[yd == label].sum() == 0:
            wd[yd == label] = 1e-12
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = l1_model(C)
        if random_state is not None:
            model.set_params(random_state=random_state)
        return model.fit(Xd, yd, sample_weight=wd).coef_[0]


def choose_penalty_v1(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """alpaca_eval's C: 5-fold GroupKFold over rows, the weighted soft log loss (mean of
    ``w * loss`` over each fold) averaged over folds; the smallest C among equal scores.

    As scikit-learn's ``LogisticRegressionCV`` does, each fold's path over the Cs draws
    liblinear's seeds in turn from one ``RandomState(123)`` (the coordinate order of the L1
    solver; with a fresh seed per C the near-equal scores of large Cs can rank differently)."""
    from sklearn.model_selection import GroupKFold

    losses = np.zeros(len(CS))
    for train, test in GroupKFold(n_splits=FOLDS).split(X, y, groups=np.arange(len(y))):
        seeds = np.random.RandomState(123)
        for i, C in enumerate(CS):
            beta = _fit(X[train], y[train], w[train], C, random_state=seeds)
            p = np.clip(sigmoid(X[test] @ beta), 1e-15, 1 - 1e-15)
            ll = y[test] * np.log(p) + (1 - y[test]) * np.log(1 - p)
            losses[i] += -np.mean(w[test] * ll) / FOLDS
    return float(CS[int(np.argmin(losses))])


def fit_v1(
    pairs: pd.DataFrame,
    difficulty: pd.Series,
    gamed: pd.DataFrame | None,
    C: float | None = None,
) -> V1Fit:
    """``length_controlled_v1`` of one system's ``pairs`` (C by cross-validation unless given)."""
    X, y, w, n_gamed = design(pairs, difficulty, gamed)
    C = choose_penalty_v1(X, y, w) if C is None else C
    phi, psi, theta = _fit(X, y, w, C)
    gamma = X[n_gamed:, 1]
    lc = float(100 * sigmoid(theta + psi * gamma).mean())
    return V1Fit(lc=lc, theta=float(theta), phi=float(-phi), psi=float(psi), C=C)


def predict_from_weights(theta: float, psi: float, difficulty: np.ndarray) -> float:
    """LC win rate (%) from published coefficients (alpaca_eval's ``predict_winrate`` against
    the baseline whose coefficients are 0): the mean of ``sigmoid(theta + psi * gamma)``."""
    return float(100 * sigmoid(theta + psi * np.asarray(difficulty, dtype=float)).mean())


def lc_table_v1(
    prefs: pd.DataFrame,
    rounds: int,
    seed: int,
    difficulty: pd.Series | None = None,
    gamed: pd.DataFrame | None = None,
    key: str = "",
) -> pd.DataFrame:
    """:func:`~isqaflow.arena.ratings.length.lc_table`'s rows by ``length_controlled_v1``: per
    (system, baseline) n, longer, shorter, the raw win rate and -- where identified -- the LC win
    rate with its 95% percentile bootstrap over the system's queries (each resample refit at the
    chosen C; the gamed rows and difficulties held), phi, psi, C. ``difficulty``: gamma per query
    (AlpacaEval's published file); None: estimated from the *other* judged systems of the same
    baseline (:func:`~isqaflow.arena.ratings.length.query_difficulty`). The column 'difficulty'
    says which. ``gamed``: the gamed baselines' pairs (None: no regularization rows, the fit of
    ``length_controlled_noreg`` with the v1 seeding). Inputs range-checked first."""
    check_preferences(prefs, one_per_query=True)
    if gamed is not None:
        check_preferences(
            gamed.assign(baseline=gamed.get("baseline", "gamed")), "gamed pairs", one_per_query=True
        )
    rows = []
    for baseline, group in prefs.groupby("baseline", sort=True):
        for system, mine in group.groupby("system", sort=True):
            others = group[group["system"] != system]
            if difficulty is not None:
                gamma, source = difficulty, "given"
            else:
                n_other = others["system"].nunique()
                gamma = query_difficulty(others) if n_other else pd.Series(0.0, index=mine["query"])
                gamma = gamma.reindex(sorted(set(gamma.index) | set(mine["query"])), fill_value=0.0)
                if gamed is not None:
                    gamma = gamma.reindex(
                        sorted(set(gamma.index) | set(gamed["query"])), fill_value=0.0
                    )
                source = f"estimated from {n_other} other systems"
            mine = mine.reset_index(drop=True)
            delta = mine["len_system"].to_numpy(float) - mine["len_baseline"].to_numpy(float)
            row = {
                "system": system,
                "baseline": baseline,
                "n": len(mine),
                "longer": int((delta > 0).sum()),
                "shorter": int((delta < 0).sum()),
                **raw_win_rate(mine["preference"]),
                "LC win rate %": np.nan,
                "LC lower": np.nan,
                "LC upper": np.nan,
                "length coefficient": np.nan,
                "difficulty coefficient": np.nan,
                "C": np.nan,
                "glm": "length_controlled_v1" if gamed is not None else "length_controlled_noreg",
                "difficulty": source,
                "LC status": identification(mine["len_system"], mine["len_baseline"]),
            }
            if row["LC status"] == "identified":
                fit = fit_v1(mine, gamma, gamed)
                rng = keyed_rng(seed, f"lc_v1:{key}:{system}|{baseline}")
                draws = []
                for _ in range(rounds):
                    chosen = rng.integers(0, len(mine), size=len(mine))
                    draws.append(fit_v1(mine.iloc[chosen], gamma, gamed, C=fit.C).lc)
                lower, upper = np.percentile(draws, [2.5, 97.5]) if draws else (np.nan, np.nan)
                row.update(
                    {
                        "LC win rate %": fit.lc,
                        "LC lower": float(lower),
                        "LC upper": float(upper),
                        "length coefficient": fit.phi,
                        "difficulty coefficient": fit.psi,
                        "C": fit.C,
                    }
                )
            rows.append(row)
    return pd.DataFrame(rows)


def difficulty_from_weights(
    prefs: pd.DataFrame, weights: pd.DataFrame, ridge: float = 1e-2, iterations: int = 50
) -> pd.Series:
    """gamma per query that maximizes the likelihood of ``prefs`` (system, query, preference,
    len_system, len_baseline) under fixed per-system coefficients ``weights`` (index system;
    columns theta, phi in this module's direction, psi) -- the difficulty the published
    coefficients imply when AlpacaEval's own file is not at hand. One concave problem per query
    (Newton; a ``ridge`` towards 0 keeps a query every system wins, or loses, finite). Systems
    without weights are left out."""
    known = prefs[prefs["system"].isin(weights.index)].copy()
    if known.empty:
        raise ValueError("no system of the preferences has published weights")
    feature = np.zeros(len(known))
    for idx in known.groupby("system").indices.values():
        rows = known.iloc[idx]
        feature[idx] = np.tanh(-_std_delta(rows["len_system"], rows["len_baseline"]))
    w = weights.loc[known["system"]]
    offset = w["theta"].to_numpy(float) + w["phi"].to_numpy(float) * feature
    psi = w["psi"].to_numpy(float)
    y = known["preference"].to_numpy(float)
    codes, queries = pd.factorize(known["query"], sort=True)
    gamma = np.zeros(len(queries))
    for _ in range(iterations):
        p = sigmoid(offset + psi * gamma[codes])
        gradient = np.bincount(codes, psi * (y - p), len(queries)) - ridge * gamma
        hessian = np.bincount(codes, psi**2 * p * (1 - p), len(queries)) + ridge
        step = gradient / hessian
        gamma += step
        if np.max(np.abs(step)) < 1e-10:
            break
    return pd.Series(gamma, index=queries)
