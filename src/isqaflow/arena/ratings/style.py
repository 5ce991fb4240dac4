"""Style control: Bradley-Terry with arena-hard-auto's style covariates, the style-free score.

arena-hard-auto (lmarena/arena-hard-auto) publishes "style-controlled" scores
(``misc/past_leaderboards.md``, "Arena-Hard-v0.1 (Style Control)"): Bradley-Terry on the
battles against the baseline with, beside each model's strength, one coefficient per style
feature of the pair, and the score the strengths alone predict -- the win rate against the
baseline *at equal style*. This module follows the v0.1 code that made those tables
(``utils_math.py: construct_style_matrices, fit_bt`` and ``show_result.py --style-control``,
commit 0489bf3):

- **per answer** four counts (``add_markdown_info.py``; :func:`markdown_counts` re-implements
  its patterns on the answer with its fenced code blocks removed): tokens (the caller's
  tokenizer: v0.1 used tiktoken's gpt-3.5-turbo encoding), headers (lines ``#``..``######``
  and a space), list items (``1. `` ordered, ``- * +`` unordered), bold spans (``**x**``,
  ``__x__``);
- **per battle** each feature's normalized difference ``(a - b) / (a + b + 1)`` (model_a minus
  model_b), then standardized over the battles (``np.std``, ddof 0). ``features="v2"`` is the
  v2.0 code instead (``show_result.py`` at 196f6b8): length ``(a - b) / (a + b)``, the markdown
  counts as densities ``count / (tokens + 1)``, each density difference over ``(a + b + 1)``;
- **the fit**: scikit-learn's ``LogisticRegression(fit_intercept=False)`` -- its default L2
  penalty C = 1 included, as arena-hard fits it -- on each battle twice (a win of model_a two 1s,
  a tie a 1 and a 0), the strength columns ``+-ln 10``; Elo-scaled (400, anchored at the
  baseline) and reported as the win rate against the baseline, ``1 / (1 + 10^((R_b - R_m)/400))``.

**The interval**: a percentile bootstrap over battles (arena-hard resamples battles, ties kept
as their two rows), its level an argument (``level``; arena-hard v0.1's tables print 2.5-97.5
"95% CI", its v2.0 ``show_result.py`` the 5-95 quantiles -- a 90% interval under the same name);
the table names the level in its columns. Inputs are plain frames: battles (model_a, model_b,
winner in model_a / model_b / tie, question_id) and per-answer counts (model, question_id,
tokens, headers, lists, bolds).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from isqaflow.arena.ratings.battle_codes import encode_battles
from isqaflow.seeds import keyed_rng

FEATURES = ("tokens", "headers", "lists", "bolds")
SCALE, BASE, INIT = 400.0, 10.0, 1000.0  # arena-hard's Elo scale

_CODE = re.compile(r"```([^`]*)```")
_PATTERNS = {
    "headers": [re.compile(rf"^#{{{k}}}\s", re.MULTILINE) for k in range(1, 7)],
    "lists": [re.compile(r"^\s*\d+\.\s", re.MULTILINE), re.compile(r"^\s*[-*+]\s", re.MULTILINE)],
    "bolds": [re.compile(r"\*\*[^*\n]+\*\*"), re.compile(r"__[^_\n]+__")],
}


def markdown_counts(text: str) -> dict[str, int]:
    """Header, list-item and bold counts of one answer as arena-hard's ``add_markdown_info.py``
    counts them: fenced code blocks removed first (each found block's text replaced wherever it
    occurs), then each pattern's matches summed over its kinds."""
    for block in _CODE.findall(text):
        text = text.replace(block, "")
    return {
        name: sum(len(p.findall(text)) for p in patterns) for name, patterns in _PATTERNS.items()
    }


def style_differences(
    counts_a: np.ndarray, counts_b: np.ndarray, features: str = "v0.1", center: bool = True
) -> np.ndarray:
    """Per battle, the normalized style differences (model_a minus model_b), standardized over
    the battles. ``counts_*``: arrays (battles x 4) in :data:`FEATURES` order. ``center``:
    arena-hard subtracts the battles' mean, so "equal style" is the *average* difference of the
    battles fitted (it moves with the models in the fit); False scales only, so the strengths
    are read at a difference of 0.  A feature that does not vary over the battles is an error
    (arena-hard would divide by a zero deviation)."""
    diff = _normalized_differences(counts_a, counts_b, features)
    sd = diff.std(axis=0)
    if np.any(sd == 0):
        constant = [FEATURES[i] for i in np.flatnonzero(sd == 0)]
        raise ValueError(f"style features {constant} do not vary over the battles: not identified")
    return ((diff - diff.mean(axis=0)) if center else diff) / sd


def _normalized_differences(
    counts_a: np.ndarray, counts_b: np.ndarray, features: str
) -> np.ndarray:
    """Per battle, each feature's normalized difference (model_a minus model_b), unscaled."""
    a, b = np.asarray(counts_a, dtype=float), np.asarray(counts_b, dtype=float)
    if features == "v0.1":
        diff = (a - b) / (a + b + 1)
    elif features == "v2":
        diff = np.empty_like(a)
        with np.errstate(invalid="raise", divide="raise"):
            diff[:, 0] = (a[:, 0] - b[:, 0]) / (a[:, 0] + b[:, 0])
        da, db = a[:, 1:] / (a[:, :1] + 1), b[:, 1:] / (b[:, :1] + 1)
        diff[:, 1:] = (da - db) / (da + db + 1)
    else:
        raise ValueError(f"features must be 'v0.1' or 'v2', got {features!r}")
    return diff


def _design(
    battles: pd.DataFrame, style: np.ndarray
) -> tuple[pd.Index, np.ndarray, np.ndarray, np.ndarray]:
    """(models, X, Y, is tie) with each battle twice, as ``construct_style_matrices``."""
    models, ia, ib, code = encode_battles(battles)
    n, p = len(battles), len(models)
    X = np.zeros((2 * n, p + style.shape[1]))
    rows = np.arange(2 * n)
    X[rows, np.r_[ia, ia]] = math.log(BASE)
    X[rows, np.r_[ib, ib]] = -math.log(BASE)
    X[:, p:] = np.vstack([style, style])
    tie = code == 2
    Y = np.r_[(code == 0) | tie, code == 0].astype(float)
    return models, X, Y, tie


def _fit(X: np.ndarray, Y: np.ndarray, p: int) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression

    # arena-hard's fit_bt: LogisticRegression's defaults (L2, C = 1, lbfgs), no intercept
    return LogisticRegression(fit_intercept=False).fit(X, Y).coef_[0]


def _win_rates(coef: np.ndarray, models: pd.Index, baseline: str) -> pd.Series:
    elo = SCALE * coef[: len(models)] + INIT
    elo = elo - elo[models.get_loc(baseline)] + INIT
    return pd.Series(
        100 / (1 + BASE ** ((elo[models.get_loc(baseline)] - elo) / SCALE)), index=models
    )


def attach_counts(battles: pd.DataFrame, counts: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each battle's answer counts of model_a and model_b (a battle whose answer has no counts
    is a named error)."""
    table = counts.set_index(["model", "question_id"])[list(FEATURES)]
    if table.index.duplicated().any():
        model, qid = table.index[table.index.duplicated()][0]
        raise ValueError(f"answer counts: two rows for model {model!r}, question {qid!r}")
    out = []
    for side in ("model_a", "model_b"):
        keys = pd.MultiIndex.from_arrays([battles[side], battles["question_id"]])
        missing = ~keys.isin(table.index)
        if missing.any():
            i = int(np.argmax(missing))
            raise ValueError(
                f"battle {i}: no answer counts for {side} {keys[i][0]!r}, question {keys[i][1]!r}"
            )
        out.append(table.loc[keys].to_numpy(dtype=float))
    return out[0], out[1]


def style_controlled(
    battles: pd.DataFrame,
    counts: pd.DataFrame,
    baseline: str,
    rounds: int = 100,
    seed: int = 0,
    level: float = 0.95,
    features: str = "v0.1",
    center: bool = True,
    constant: str = "error",
) -> tuple[pd.DataFrame, pd.Series]:
    """(table, style coefficients): per model the style-controlled win rate against ``baseline``
    (%) with its percentile bootstrap interval at ``level`` over battles, and beside it the
    plain Bradley-Terry win rate of the same fit without style columns; the coefficients of the
    four features (in :data:`FEATURES` order, standardized units). ``features``, ``center``: as
    :func:`style_differences`. ``constant``: a feature that does not vary over the battles is
    an error (``"error"``, as :func:`style_differences`) or left out of the fit (``"drop"``:
    its coefficient NaN) -- e.g. no answer of a small run has a header.  A bootstrap resample
    whose battles all went one way has no finite fit: it is left out and counted in the table's
    ``attrs["one_outcome_resamples"]``; all battles one way is an error."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if constant not in ("error", "drop"):
        raise ValueError(f"constant must be 'error' or 'drop', got {constant!r}")
    counts_a, counts_b = attach_counts(battles, counts)
    if constant == "error":
        style = style_differences(counts_a, counts_b, features, center)
        kept = np.ones(len(FEATURES), dtype=bool)
    else:
        diff = _normalized_differences(counts_a, counts_b, features)
        sd = diff.std(axis=0)
        kept = sd > 0
        style = (((diff - diff.mean(axis=0)) if center else diff) / np.where(kept, sd, 1.0))[
            :, kept
        ]
    models, X, Y, tie = _design(battles, style)
    if baseline not in models:
        raise ValueError(f"baseline {baseline!r} is in no battle")
    p = len(models)
    if np.all(Y == Y[0]):
        raise ValueError("every battle has the same outcome: no finite style fit")
    coef = _fit(X, Y, p)
    plain = _win_rates(_fit(X[:, :p], Y, p), models, baseline)
    controlled = _win_rates(coef, models, baseline)
    rng = keyed_rng(seed, f"style:{baseline}")
    n = len(battles)
    draws, one_outcome = [], 0
    for _ in range(rounds):
        idx = rng.integers(0, n, size=n)
        rows = np.r_[idx, idx + n]  # a battle's two rows travel together (a tie stays a tie)
        if np.all(Y[rows] == Y[rows][0]):  # every resampled battle one way: no finite fit
            one_outcome += 1
            continue
        draws.append(_win_rates(_fit(X[rows], Y[rows], p), models, baseline).to_numpy())
    tail = 100 * (1 - level) / 2
    pct = f"{100 * level:g}%"
    lower, upper = (
        np.percentile(np.array(draws), [tail, 100 - tail], axis=0) if draws else (np.nan, np.nan)
    )
    table = pd.DataFrame(
        {
            "style-controlled win rate %": controlled,
            f"lower ({pct})": lower,
            f"upper ({pct})": upper,
            "Bradley-Terry win rate %": plain,
            "battles": pd.Series(
                pd.concat([battles["model_a"], battles["model_b"]]).value_counts()
            ).reindex(models),
        }
    )
    table.index.name = "model"
    # resamples left out because every battle in them went one way (counted, never silent)
    table.attrs["one_outcome_resamples"] = one_outcome
    coefficients = np.full(len(FEATURES), np.nan)
    coefficients[kept] = coef[p:]
    return table, pd.Series(coefficients, index=list(FEATURES), name="style coefficient")
