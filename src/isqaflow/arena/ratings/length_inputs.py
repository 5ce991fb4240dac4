"""The inputs of the length-controlled win rates: judged records to preferences, their range
checks, and the rule that says where the data identify an LC win rate.

**Verdicts.** A record's ``verdict`` is this project's label -- ``"1"`` (system_a wins),
``"tie"``, ``"2"`` -- or a **soft verdict**: a number in [1, 2] on the same scale (1 the first
system's win, 2 the second's, 1.5 even), e.g. AlpacaEval's judge probability; system_a's
preference is ``2 - verdict``. Any other label (``invalid``, an unparsed judgment) is left out
here and counted by the judging stage; a number outside [1, 2] or not finite is an error naming
the record.

**Range checks** (:func:`check_preferences`, before any fit): preference a finite number in
[0, 1]; lengths finite, whole and not negative; system, baseline and query present; one pair per
(system, baseline, query) where the fit needs it (``length_controlled_v1``). A bad row is a :class:`ValueError` naming the row and the field.

**Identification** (:func:`identification`). The LC win rate is the fit's prediction at a
length difference of 0; it is an interpolation only where 0 lies inside the bulk of the
observed differences. The rule: at least ``MIN_PAIRS`` (10) pairs (5 folds of at least 2), and
on *each* side of 0 (a pair of equal lengths counts on both) at least ``MIN_SIDE`` (3) pairs
**and** at least ``MIN_SIDE_SHARE`` (5%) of them -- 0 inside the central 90% of the length
differences. The share makes the rule relative to n: with AlpacaEval's 805 instructions a
system needs 41 pairs on each side, where an absolute 3 called identified a system longer in 8
of 805 pairs (1%: its LC win rate rests on the tanh's tail fitted by 8 points). Below 60 pairs
the absolute 3 is the larger bound, so the run-sized tables keep the rule they had.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

PREFERENCE = {"1": 1.0, "tie": 0.5, "2": 0.0}  # verdict of system_a -> its preference
FOLDS = 5  # alpaca_eval's n_splits
MIN_PAIRS = 2 * FOLDS  # fewer pairs: no LC win rate, no interval (5 folds of at least 2 pairs)
MIN_SIDE = 3  # pairs with the system not shorter, and not longer, at the least
MIN_SIDE_SHARE = 0.05  # ... and this share of the pairs on each side: 0 in the central 90%
PREFERENCE_COLUMNS = ("system", "baseline", "query", "preference", "len_system", "len_baseline")
RAW_WIN_RATE = "win rate (ties half) %"
RAW_WIN_RATE_SE = "win rate SE"


def raw_win_rate(preference: pd.Series) -> dict[str, float]:
    """A system's raw win rate over its baseline (ties half: the mean preference, x100) and its
    standard error as AlpacaEval reports it (``standard_error`` of ``alpaca_eval``'s
    ``get_winrate``: the sample standard error of the mean preference, ddof 1, x100; NaN for one
    pair) -- the interval of a win rate from soft preferences, which give no battles."""
    return {RAW_WIN_RATE: 100 * preference.mean(), RAW_WIN_RATE_SE: 100 * preference.sem()}


def soft_verdict(verdict) -> float | None:
    """system_a's preference of one verdict: a label of :data:`PREFERENCE`, or ``2 - v`` for a
    number ``v`` in [1, 2]; ``None`` for another label or a missing verdict (None, NaN: an
    invalid verdict); a number outside [1, 2] raises."""
    if isinstance(verdict, str):
        if verdict in PREFERENCE:
            return PREFERENCE[verdict]
        try:
            value = float(verdict)
        except ValueError:
            return None
    elif isinstance(verdict, bool) or verdict is None:
        return None
    else:
        value = float(verdict)
    if math.isnan(value):  # a missing verdict (None becomes NaN in a float column)
        return None
    if not (math.isfinite(value) and 1.0 <= value <= 2.0):
        raise ValueError(f"soft verdict {verdict!r} is outside [1, 2]")
    return 2.0 - value


def preferences(records: pd.DataFrame) -> pd.DataFrame:
    """One row per judged pair with a valid verdict (a label or a soft verdict: see the module):
    system (system_a), baseline (system_b), query, preference of the system in [0, 1] and both
    answers' lengths. A soft verdict out of range is an error naming the record."""
    prefs = []
    for position, verdict in enumerate(records["verdict"].tolist()):
        try:
            prefs.append(soft_verdict(verdict))
        except ValueError as error:
            row = records.iloc[position]
            raise ValueError(
                f"record {position} ({row.get('system_a')} vs {row.get('system_b')}, "
                f"qid {row.get('qid')}), field 'verdict': {error}"
            ) from None
    keep = np.array([p is not None for p in prefs], dtype=bool)
    valid = records[keep]
    return pd.DataFrame(
        {
            "system": valid["system_a"].to_numpy(),
            "baseline": valid["system_b"].to_numpy(),
            "query": (valid["domain"].astype(str) + ":" + valid["qid"].astype(str)).to_numpy(),
            "preference": np.array([p for p in prefs if p is not None], dtype=float),
            "len_system": valid["answer_a"].str.len().to_numpy(),
            "len_baseline": valid["answer_b"].str.len().to_numpy(),
        }
    )


def check_preferences(
    prefs: pd.DataFrame, what: str = "preferences", one_per_query: bool = False
) -> None:
    """Raise a ValueError naming the row and the field of the first out-of-range input.
    ``one_per_query``: a second pair of one (system, baseline, query) is an error too (AlpacaEval
    judges each instruction once; this project's tables may hold several judgments of a query,
    which their bootstrap resamples together)."""
    missing = [c for c in PREFERENCE_COLUMNS if c not in prefs.columns]
    if missing:
        raise ValueError(f"{what}: missing columns {missing}")
    for column in ("system", "baseline", "query"):
        bad = prefs[column].isna()
        if bad.any():
            raise ValueError(
                f"{what}: row {int(np.argmax(bad.to_numpy()))}, field {column!r} is empty"
            )
    checks = {
        "preference": (0.0, 1.0, "a system's preference in [0, 1] (a win 1, a tie 0.5)"),
        "len_system": (0.0, np.inf, "a length in characters (whole, not negative)"),
        "len_baseline": (0.0, np.inf, "a length in characters (whole, not negative)"),
    }
    for column, (low, high, meaning) in checks.items():
        values = pd.to_numeric(prefs[column], errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(values) | (values < low) | (values > high)
        if column != "preference":
            bad |= np.isfinite(values) & (values != np.round(values))
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(
                f"{what}: row {i} ({prefs['system'].iloc[i]} vs {prefs['baseline'].iloc[i]}, "
                f"query {prefs['query'].iloc[i]}), field {column!r} = {prefs[column].iloc[i]!r}: "
                f"expected {meaning}"
            )
    duplicated = prefs.duplicated(["system", "baseline", "query"])
    if one_per_query and duplicated.any():
        i = int(np.argmax(duplicated.to_numpy()))
        raise ValueError(
            f"{what}: row {i} repeats the pair ({prefs['system'].iloc[i]} vs "
            f"{prefs['baseline'].iloc[i]}, query {prefs['query'].iloc[i]})"
        )


def min_side(n: int) -> int:
    """Pairs needed on each side of a length difference of 0 among ``n``."""
    return max(MIN_SIDE, math.ceil(MIN_SIDE_SHARE * n))


def identification(len_system: np.ndarray, len_baseline: np.ndarray) -> str:
    """'identified', or 'not identified: <reason>' by the rule of the module's docstring (a pair
    of equal lengths sits at a length difference of 0 and counts on both sides)."""
    delta = np.asarray(len_system, dtype=float) - np.asarray(len_baseline, dtype=float)
    n, longer, shorter = len(delta), int((delta >= 0).sum()), int((delta <= 0).sum())
    if n < MIN_PAIRS:
        return f"not identified: {n} pairs, the cross-validated fit needs at least {MIN_PAIRS}"
    need = min_side(n)
    if longer < need or shorter < need:
        return (
            f"not identified: the system is not shorter in {longer} and not longer in {shorter} of {n} "
            f"pairs (at least {need} of each needed: else a length difference of 0 is an extrapolation)"
        )
    return "identified"
