"""Length-controlled win rates (AlpacaEval 2.0) and the judge's length bias.

LLM judges prefer longer answers.  AlpacaEval 2.0's length-controlled win rate
(Dubois et al. 2024, "Length-Controlled AlpacaEval") models each preference of a
system over its baseline with a logistic regression on three terms -- the system
(an intercept), the standardized length difference through ``tanh``, and the query
(its difficulty, weighted per system) -- and reports the win rate the model predicts
with the length term set to zero, averaged over the system's pairs:

    logit P(system wins on x) = theta + phi * tanh(delta_len / sd(delta_len)) + psi * gamma_x
    LC win rate               = 100 * mean_x sigmoid(theta + psi * gamma_x)

``delta_len`` is the difference in characters (system minus baseline; ``sd`` over the
system's pairs, as AlpacaEval), and a tie counts half a win (AlpacaEval's 1.5).  The
query difficulties ``gamma_x``: AlpacaEval takes them from a fit over the models of
its leaderboard; here they are fit the same way over the *other* systems of the run that
meet the same baseline (per-system intercepts and length slopes, one effect per query,
ridge-penalized, centred and scaled to unit variance; 0 for a query no other system
met) -- never over the system's own pairs, whose outcomes they would otherwise restate
(one pair per query: the difficulty term would fit each outcome exactly).

**The fit is AlpacaEval's default fit** (``fit_LogisticRegressionCV`` of
``alpaca_eval.metrics.glm_winrate``): scikit-learn's L1-penalized logistic regression
(liblinear, no separate intercept, ``random_state`` 123) on the soft labels (each pair
twice, labels 1 and 0 weighted by the preference and its complement), the penalty ``C``
chosen among ``logspace(-4, 4, 10)`` by 5-fold cross-validation over pairs
(``GroupKFold``) on the soft-label log loss, then refit on all pairs (each fit seeded 123
afresh, where scikit-learn's ``LogisticRegressionCV`` draws one fold's seeds in turn: the
chosen C can differ where scores tie to 1e-6, hence the 0.01 tolerance of its test;
:mod:`~isqaflow.arena.ratings.length_v1` seeds as it does)
(:func:`fit_lc`; tests/test_length_control.py compares it with alpaca_eval 0.6.6's own
numbers on the same preferences).  The 95% interval is a percentile bootstrap over
queries, each resample refit at the penalty chosen on all pairs (the query difficulties
held fixed).

**Reported only where the data decide it.**  The LC win rate is the prediction at
``delta_len = 0``; it is an interpolation only when the system is longer than its
baseline in some pairs and shorter in others.  The rule
(:func:`~isqaflow.arena.ratings.length_inputs.identification`): at least 3 pairs *and* 5% of
the pairs with the system not shorter, and as many with it not longer (a pair of equal lengths
counts on both sides) -- 0 inside the central 90% of the length differences -- and at least
``MIN_PAIRS`` (10) pairs in all (5 folds of at least 2 pairs).  Otherwise the row says
"not identified" with the reason and carries no LC win rate and no interval: when every
answer is shorter than its reference, the intercept is an extrapolation that the
penalty, not the data, sets.  So is a fit whose cross-validated penalty sets every
coefficient to 0 (on few, noisy pairs the cross-validation often picks the smallest C):
its LC win rate is 50 by construction, and the row says so instead.

The length bias: only pairs of **two model answers** (kinds ``all_pairs`` and
``head_to_head``: no reference, no abstract) separate the judge's preference for length
from the reference's quality (the reference is usually the longer answer, so against it
"the longer wins" restates "the reference wins").  Among decided pairs (no tie, no
invalid verdict) whose answers differ in length, the share the longer answer wins, with
its exact (Clopper-Pearson) 95% interval and the two-sided exact binomial test against
50%; pairs over the same query are not independent, so a second p-value comes from a
sign-flip permutation test by query (each query's pairs flip together).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from isqaflow.arena.ratings.length_inputs import (
    FOLDS,
    MIN_PAIRS,
    MIN_SIDE,
    PREFERENCE,
    check_preferences,
    identification,
    preferences,
    raw_win_rate,
)
from isqaflow.seeds import keyed_rng

__all__ = [
    "MIN_PAIRS",
    "MIN_SIDE",
    "PREFERENCE",
    "fit_lc",
    "identification",
    "lc_table",
    "length_bias",
    "length_tables",
    "preferences",
    "query_difficulty",
]

QUERY_RIDGE = 1.0  # penalty of the query effects (a query met by few systems stays near 0)
CS = np.logspace(
    -4, 4, 10
)  # the penalties alpaca_eval's cross-validation chooses among (scikit-learn's Cs=10)
MODEL_PAIRS = (
    "all_pairs",
    "head_to_head",
)  # kinds of pairs of two model answers: the length-bias pairs
PERMUTATIONS = 10000


def sigmoid(x: np.ndarray) -> np.ndarray:
    """The logistic function, computed without overflow."""
    return np.exp(-np.logaddexp(0.0, -x))


def fit_logistic(
    X: np.ndarray,
    y: np.ndarray,
    penalty: np.ndarray | float = 1e-2,
    iterations: int = 100,
    start: np.ndarray | None = None,
) -> np.ndarray:
    """Coefficients of a logistic regression with soft labels ``y`` in [0, 1] and an L2 ``penalty``
    (per coefficient, or one for all), by Newton's method from ``start`` (zeros); no intercept
    is added."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    lam = np.broadcast_to(np.asarray(penalty, dtype=float), (X.shape[1],))
    beta = np.zeros(X.shape[1]) if start is None else np.array(start, dtype=float)
    for _ in range(iterations):
        p = sigmoid(X @ beta)
        gradient = X.T @ (p - y) + lam * beta
        hessian = (X * (p * (1 - p))[:, None]).T @ X + np.diag(lam)
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.max(np.abs(step)) < 1e-9:
            break
    return beta


def length_feature(len_system: np.ndarray, len_baseline: np.ndarray) -> np.ndarray:
    """tanh of the length difference standardized over the pairs (0 when all are equal)."""
    delta = np.asarray(len_system, dtype=float) - np.asarray(len_baseline, dtype=float)
    sd = delta.std(ddof=1) if len(delta) > 1 else 0.0
    return np.tanh(delta / sd) if sd > 0 else np.zeros_like(delta)


def query_difficulty(pairs: pd.DataFrame) -> pd.Series:
    """gamma per query from all systems' pairs against one baseline: a joint fit with an
    intercept and a length slope per system and a ridge-penalized effect per query; the
    effects centred and scaled to unit variance (all zero when they do not vary)."""
    systems = sorted(pairs["system"].unique())
    queries = sorted(pairs["query"].unique())
    columns = []
    for s in systems:
        mine = (pairs["system"] == s).to_numpy(dtype=float)
        columns.append(mine)
        feature = np.zeros(len(pairs))
        feature[mine == 1] = length_feature(
            pairs.loc[mine == 1, "len_system"], pairs.loc[mine == 1, "len_baseline"]
        )
        columns.append(feature)
    for q in queries:
        columns.append((pairs["query"] == q).to_numpy(dtype=float))
    X = np.column_stack(columns)
    penalty = np.array([1e-2] * (2 * len(systems)) + [QUERY_RIDGE] * len(queries))
    beta = fit_logistic(X, pairs["preference"].to_numpy(), penalty)
    gamma = beta[2 * len(systems) :]
    gamma = gamma - gamma.mean()
    sd = gamma.std(ddof=1) if len(gamma) > 1 else 0.0
    return pd.Series(gamma / sd if sd > 1e-12 else np.zeros_like(gamma), index=queries)


def _design(pairs: pd.DataFrame, gamma: pd.Series) -> np.ndarray:
    """Columns intercept, length term, difficulty (0 for a query ``gamma`` does not know)."""
    return np.column_stack(
        [
            np.ones(len(pairs)),
            length_feature(pairs["len_system"], pairs["len_baseline"]),
            pairs["query"].map(gamma).fillna(0.0).to_numpy(dtype=float),
        ]
    )


def l1_model(C: float):
    """alpaca_eval's L1 logistic regression at ``C`` (liblinear, no intercept, seed 123)."""
    from sklearn.linear_model import LogisticRegression

    # alpaca_eval's penalty="l1" (scikit-learn >= 1.8 spells it l1_ratio=1)
    return LogisticRegression(
        C=C, l1_ratio=1.0, solver="liblinear", fit_intercept=False, random_state=123
    )


def _soft(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each pair twice (label 1 weighted by its preference, label 0 by the complement), as
    alpaca_eval fits soft labels; columns reordered as its formula (length, difficulty, intercept)."""
    Xs = X[:, [1, 2, 0]]
    return np.vstack([Xs, Xs]), np.r_[np.ones(len(y)), np.zeros(len(y))], np.r_[y, 1 - y]


def _fit_at(X: np.ndarray, y: np.ndarray, C: float, quiet: bool = False) -> np.ndarray:
    """L1 fit at ``C``; ``quiet``: liblinear's non-convergence warnings (its 100 iterations, as
    alpaca_eval) silenced -- for the cross-validation's and the bootstrap's many fits, not the
    reported one."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    Xd, yd, wd = _soft(X, y)
    for label in (
        0,
        1,
    ):  # all wins (or all losses): liblinear drops a class of zero weight; keep it, negligibly
        if wd[yd == label].sum() == 0:
            wd[yd == label] = 1e-12
    with warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore", ConvergenceWarning)
        coef = l1_model(C).fit(Xd, yd, sample_weight=wd).coef_[0]
    return coef[[2, 0, 1]]  # back to [intercept, length, difficulty]


def choose_penalty(X: np.ndarray, y: np.ndarray) -> float:
    """alpaca_eval's choice of C: 5-fold cross-validation over pairs (GroupKFold) of the
    soft-label log loss; the smallest C among equal scores."""
    from sklearn.model_selection import GroupKFold

    losses = np.zeros(len(CS))
    for train, test in GroupKFold(n_splits=FOLDS).split(X, y, groups=np.arange(len(y))):
        for i, C in enumerate(CS):
            p = np.clip(
                sigmoid(X[test] @ _fit_at(X[train], y[train], C, quiet=True)), 1e-15, 1 - 1e-15
            )
            losses[i] += -np.mean(y[test] * np.log(p) + (1 - y[test]) * np.log(1 - p)) / FOLDS
    return float(CS[int(np.argmin(losses))])


def fit_lc(
    X: np.ndarray,
    y: np.ndarray,
    C: float | None = None,
    quiet: bool = False,
) -> tuple[float, np.ndarray, float]:
    """(LC win rate in %, coefficients [theta, phi, psi], C) of alpaca_eval's default fit on the
    design ``X`` (columns intercept, length term, difficulty) and preferences ``y``; ``C``
    chosen by cross-validation unless given; ``quiet`` as :func:`_fit_at`."""
    C = choose_penalty(X, y) if C is None else C
    beta = _fit_at(X, y, C, quiet)
    X0 = X.copy()
    X0[:, 1] = 0.0  # the length term at zero
    return float(100 * sigmoid(X0 @ beta).mean()), beta, C


def lc_win_rate(pairs: pd.DataFrame, gamma: pd.Series) -> tuple[float, np.ndarray]:
    """(LC win rate in %, coefficients [theta, phi, psi]) of one system's pairs."""
    lc, beta, _ = fit_lc(_design(pairs, gamma), pairs["preference"].to_numpy(dtype=float))
    return lc, beta


def lc_table(prefs: pd.DataFrame, rounds: int, seed: int, key: str = "") -> pd.DataFrame:
    """Per (system, baseline): n, the pairs with the system longer and shorter, the raw win
    rate (ties half), and -- where identified (:func:`identification`) -- the LC win rate with
    its 95% bootstrap interval over queries (each resample refit at the chosen penalty), the
    length coefficient phi and the penalty C; else NaN and the reason in 'LC status'. Every input
    is range-checked first (:func:`~isqaflow.arena.ratings.length_inputs.check_preferences`)."""
    check_preferences(prefs)
    rows = []
    for baseline, group in prefs.groupby("baseline", sort=True):
        for system, mine in group.groupby("system", sort=True):
            others = group[group["system"] != system]
            # the difficulties from the *other* systems (AlpacaEval: from other models): a system's
            # own outcomes never enter its difficulty term; no other system: no difficulty term
            gamma = query_difficulty(others) if len(others) else pd.Series(dtype=float)
            mine = mine.reset_index(drop=True)
            delta = mine["len_system"].to_numpy(dtype=float) - mine["len_baseline"].to_numpy(
                dtype=float
            )
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
                "C": np.nan,
                "LC status": identification(mine["len_system"], mine["len_baseline"]),
            }
            if row["LC status"] == "identified":
                X, y = _design(mine, gamma), mine["preference"].to_numpy(dtype=float)
                lc, beta, C = fit_lc(X, y)
                if not np.any(
                    beta
                ):  # the chosen penalty, not the data, sets it: 50 by construction
                    row.update(
                        {
                            "C": C,
                            "LC status": f"not identified: the cross-validated L1 penalty (C = {C:.2g}) "
                            "sets every coefficient to 0 (an LC win rate of 50 whatever "
                            "the preferences)",
                        }
                    )
                    rows.append(row)
                    continue
                rng = keyed_rng(seed, f"lc:{key}:{system}|{baseline}")
                rows_of = list(mine.groupby("query", sort=True).indices.values())
                draws = []
                for _ in range(rounds):
                    chosen = rng.integers(0, len(rows_of), size=len(rows_of))
                    idx = np.concatenate([rows_of[q] for q in chosen])
                    draws.append(fit_lc(X[idx], y[idx], C, quiet=True)[0])
                lower, upper = np.percentile(draws, [2.5, 97.5]) if draws else (np.nan, np.nan)
                row.update(
                    {
                        "LC win rate %": lc,
                        "LC lower": float(lower),
                        "LC upper": float(upper),
                        "length coefficient": float(beta[1]),
                        "C": C,
                    }
                )
            rows.append(row)
    return pd.DataFrame(rows)


def _sign_flip_p(wins: np.ndarray, totals: np.ndarray, rng: np.random.Generator) -> float:
    """Two-sided sign-flip permutation p of sum(wins) against half of sum(totals), each query's
    pairs flipped together (wins -> totals - wins); exact up to 2^12 queries' flips, else drawn."""
    observed = abs(wins.sum() - totals.sum() / 2)
    if len(wins) <= 12:
        flips = np.array(np.meshgrid(*[[0, 1]] * len(wins))).reshape(len(wins), -1).T
    else:
        flips = rng.integers(0, 2, size=(PERMUTATIONS, len(wins)))
    stats = np.abs(np.where(flips == 1, totals - wins, wins).sum(axis=1) - totals.sum() / 2)
    return float(np.mean(stats >= observed - 1e-9))


def length_bias(records: pd.DataFrame, seed: int = 0, key: str = "") -> dict[str, float]:
    """Share of decided pairs of unequal length that the longer answer wins, with its exact
    95% interval, the two-sided exact binomial p-value against 50% (pairs as independent) and
    the sign-flip permutation p by query (pairs over one query move together)."""
    from scipy.stats import binomtest

    decided = records[records["verdict"].isin(["1", "2"])]
    len_a, len_b = decided["answer_a"].str.len(), decided["answer_b"].str.len()
    unequal = len_a != len_b
    longer_wins = ((decided["verdict"] == "1") & (len_a > len_b)) | (
        (decided["verdict"] == "2") & (len_b > len_a)
    )
    n, k = int(unequal.sum()), int((longer_wins & unequal).sum())
    queries = (decided["domain"].astype(str) + ":" + decided["qid"].astype(str))[unequal]
    if n == 0:
        return {
            "pairs": 0,
            "queries": 0,
            "longer wins": 0,
            "longer wins %": np.nan,
            "lower": np.nan,
            "upper": np.nan,
            "p": np.nan,
            "p by query": np.nan,
        }
    test = binomtest(k, n, 0.5)
    interval = test.proportion_ci(confidence_level=0.95, method="exact")
    per_query = pd.DataFrame({"query": queries, "win": longer_wins[unequal].astype(int)}).groupby(
        "query"
    )["win"]
    p_query = _sign_flip_p(
        per_query.sum().to_numpy(), per_query.size().to_numpy(), keyed_rng(seed, f"bias:{key}")
    )
    return {
        "pairs": n,
        "queries": int(queries.nunique()),
        "longer wins": k,
        "longer wins %": 100 * k / n,
        "lower": 100 * interval.low,
        "upper": 100 * interval.high,
        "p": float(test.pvalue),
        "p by query": p_query,
    }


def length_tables(
    judged: pd.DataFrame,
    rounds: int,
    seed: int,
    kinds: Sequence[str] = ("reference", "all_pairs", "head_to_head"),
    glm: str = "noreg",
    gamed: Sequence[str] = (),
    difficulty: pd.Series | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """LC win rates per setting and kind of pair, and the length bias per setting and kind of
    pair of two model answers (:data:`MODEL_PAIRS`), from judged records (columns setting,
    kind, domain, qid, system_a/b, answer_a/b, verdict).

    ``glm``: ``noreg`` (:func:`lc_table`) or ``length_controlled_v1``
    (:func:`~isqaflow.arena.ratings.length_v1.lc_table_v1`; config ``arena.length_control``):
    the pairs of the ``gamed`` systems are then the regularisation rows (no LC row of their own),
    ``difficulty`` the instruction difficulty per query (None: estimated)."""
    if glm not in ("noreg", "length_controlled_v1"):
        raise ValueError(f"glm must be noreg or length_controlled_v1, got {glm!r}")
    lc_parts, bias_rows = [], []
    for (setting, kind), df in judged[judged["kind"].isin(list(kinds))].groupby(
        ["setting", "kind"], sort=True
    ):
        prefs = preferences(df)
        if glm == "noreg":
            table = lc_table(prefs, rounds, seed, key=f"{setting}:{kind}")
        else:  # length_v1 imports this module: imported here, not at the top
            from isqaflow.arena.ratings.length_v1 import lc_table_v1

            is_gamed = prefs["system"].isin(list(gamed))
            table = lc_table_v1(
                prefs[~is_gamed],
                rounds,
                seed,
                difficulty=difficulty,
                gamed=prefs[is_gamed] if is_gamed.any() else None,
                key=f"{setting}:{kind}",
            )
        if not table.empty:
            lc_parts.append(table.assign(setting=setting, kind=kind))
        if kind in MODEL_PAIRS:
            bias_rows.append(
                {"setting": setting, "kind": kind, **length_bias(df, seed, key=f"{setting}:{kind}")}
            )
    lc = (
        pd.concat(lc_parts, ignore_index=True).set_index(["setting", "kind", "system", "baseline"])
        if lc_parts
        else pd.DataFrame()
    )
    bias = pd.DataFrame(bias_rows).set_index(["setting", "kind"]) if bias_rows else pd.DataFrame()
    return lc, bias
