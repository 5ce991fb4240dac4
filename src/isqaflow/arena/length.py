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
its leaderboard; here they are fit the same way over the systems of the run that meet
the same baseline (per-system intercepts and length slopes, one effect per query,
ridge-penalized, centred and scaled to unit variance).  Each fit is a ridge-penalized
maximum-likelihood logistic regression with soft labels, solved by Newton's method;
AlpacaEval fits with an L1 penalty chosen by 5-fold cross-validation (scikit-learn),
which on enough pairs selects a penalty small enough to give the same predictions
(tests/test_length_control.py compares the two on the same preferences).  The 95%
interval is a percentile bootstrap over queries (the query difficulties held fixed).

The length bias: among decided pairs (no tie, no invalid verdict) whose answers differ
in length, the share the longer answer wins, with its exact (Clopper-Pearson) 95%
interval and the two-sided exact binomial test against 50%.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from isqaflow.seeds import keyed_rng

PREFERENCE = {"1": 1.0, "tie": 0.5, "2": 0.0}  # verdict of system_a -> its preference
RIDGE = 1e-2  # penalty of the per-system fits: keeps a separated system finite
QUERY_RIDGE = 1.0  # penalty of the query effects (a query met by few systems stays near 0)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -x))


def fit_logistic(X: np.ndarray, y: np.ndarray, penalty: np.ndarray | float = RIDGE,
                 iterations: int = 100, start: np.ndarray | None = None) -> np.ndarray:
    """Coefficients of a logistic regression with soft labels ``y`` in [0, 1] and an L2 ``penalty``
    (per coefficient, or one for all), by Newton's method from ``start`` (zeros); no intercept
    is added."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    lam = np.broadcast_to(np.asarray(penalty, dtype=float), (X.shape[1],))
    beta = np.zeros(X.shape[1]) if start is None else np.array(start, dtype=float)
    for _ in range(iterations):
        p = _sigmoid(X @ beta)
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
        feature[mine == 1] = length_feature(pairs.loc[mine == 1, "len_system"], pairs.loc[mine == 1, "len_baseline"])
        columns.append(feature)
    for q in queries:
        columns.append((pairs["query"] == q).to_numpy(dtype=float))
    X = np.column_stack(columns)
    penalty = np.array([RIDGE] * (2 * len(systems)) + [QUERY_RIDGE] * len(queries))
    beta = fit_logistic(X, pairs["preference"].to_numpy(), penalty)
    gamma = beta[2 * len(systems):]
    gamma = gamma - gamma.mean()
    sd = gamma.std(ddof=1) if len(gamma) > 1 else 0.0
    return pd.Series(gamma / sd if sd > 1e-12 else np.zeros_like(gamma), index=queries)


def _design(pairs: pd.DataFrame, gamma: pd.Series) -> np.ndarray:
    return np.column_stack([np.ones(len(pairs)), length_feature(pairs["len_system"], pairs["len_baseline"]),
                            pairs["query"].map(gamma).to_numpy(dtype=float)])


def _lc(X: np.ndarray, y: np.ndarray, start: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    beta = fit_logistic(X, y, start=start)
    X0 = X.copy()
    X0[:, 1] = 0.0  # the length term at zero
    return float(100 * _sigmoid(X0 @ beta).mean()), beta


def lc_win_rate(pairs: pd.DataFrame, gamma: pd.Series) -> tuple[float, np.ndarray]:
    """(LC win rate in %, coefficients [theta, phi, psi]) of one system's pairs."""
    return _lc(_design(pairs, gamma), pairs["preference"].to_numpy(dtype=float))


def preferences(records: pd.DataFrame) -> pd.DataFrame:
    """One row per judged pair with a valid verdict: system (system_a), baseline (system_b),
    query, preference of the system (1 win, 0.5 tie, 0 loss) and both answers' lengths."""
    valid = records[records["verdict"].isin(list(PREFERENCE))]
    return pd.DataFrame({
        "system": valid["system_a"].to_numpy(), "baseline": valid["system_b"].to_numpy(),
        "query": (valid["domain"].astype(str) + ":" + valid["qid"].astype(str)).to_numpy(),
        "preference": valid["verdict"].map(PREFERENCE).to_numpy(dtype=float),
        "len_system": valid["answer_a"].str.len().to_numpy(), "len_baseline": valid["answer_b"].str.len().to_numpy(),
    })


def lc_table(prefs: pd.DataFrame, rounds: int, seed: int, key: str = "") -> pd.DataFrame:
    """Per (system, baseline): n, the raw win rate (ties half), the LC win rate with its 95%
    bootstrap interval over queries (each pair keeps its standardized length term), and the
    length coefficient phi."""
    rows = []
    for baseline, group in prefs.groupby("baseline", sort=True):
        gamma = query_difficulty(group)
        for system, mine in group.groupby("system", sort=True):
            mine = mine.reset_index(drop=True)
            X, y = _design(mine, gamma), mine["preference"].to_numpy(dtype=float)
            lc, beta = _lc(X, y)
            rng = keyed_rng(seed, f"lc:{key}:{system}|{baseline}")
            rows_of = list(mine.groupby("query", sort=True).indices.values())
            draws = []
            for _ in range(rounds):
                chosen = rng.integers(0, len(rows_of), size=len(rows_of))
                idx = np.concatenate([rows_of[q] for q in chosen])
                draws.append(_lc(X[idx], y[idx], start=beta)[0])  # from the full fit: fewer steps
            lower, upper = (np.percentile(draws, [2.5, 97.5]) if draws else (np.nan, np.nan))
            rows.append({"system": system, "baseline": baseline, "n": len(mine),
                         "win rate (ties half) %": 100 * mine["preference"].mean(),
                         "LC win rate %": lc, "LC lower": float(lower), "LC upper": float(upper),
                         "length coefficient": float(beta[1])})
    return pd.DataFrame(rows)


def length_bias(records: pd.DataFrame) -> dict[str, float]:
    """Share of decided pairs of unequal length that the longer answer wins, with its exact
    95% interval and the two-sided exact binomial p-value against 50%."""
    from scipy.stats import binomtest

    decided = records[records["verdict"].isin(["1", "2"])]
    len_a, len_b = decided["answer_a"].str.len(), decided["answer_b"].str.len()
    unequal = len_a != len_b
    longer_wins = ((decided["verdict"] == "1") & (len_a > len_b)) | ((decided["verdict"] == "2") & (len_b > len_a))
    n, k = int(unequal.sum()), int((longer_wins & unequal).sum())
    if n == 0:
        return {"pairs": 0, "longer wins": 0, "longer wins %": np.nan, "lower": np.nan, "upper": np.nan,
                "p": np.nan}
    test = binomtest(k, n, 0.5)
    interval = test.proportion_ci(confidence_level=0.95, method="exact")
    return {"pairs": n, "longer wins": k, "longer wins %": 100 * k / n, "lower": 100 * interval.low,
            "upper": 100 * interval.high, "p": float(test.pvalue)}


def length_tables(judged: pd.DataFrame, rounds: int, seed: int,
                  kinds: Sequence[str] = ("reference", "all_pairs", "head_to_head"),
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """LC win rates and length bias per setting and kind of pair, from judged records
    (columns setting, kind, domain, qid, system_a/b, answer_a/b, verdict)."""
    lc_parts, bias_rows = [], []
    for (setting, kind), df in judged[judged["kind"].isin(list(kinds))].groupby(["setting", "kind"], sort=True):
        table = lc_table(preferences(df), rounds, seed, key=f"{setting}:{kind}")
        if not table.empty:
            lc_parts.append(table.assign(setting=setting, kind=kind))
        bias_rows.append({"setting": setting, "kind": kind, **length_bias(df)})
    lc = (pd.concat(lc_parts, ignore_index=True).set_index(["setting", "kind", "system", "baseline"])
          if lc_parts else pd.DataFrame())
    bias = pd.DataFrame(bias_rows).set_index(["setting", "kind"]) if bias_rows else pd.DataFrame()
    return lc, bias
